// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import regexp from 'eslint-plugin-regexp';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'data/', 'test/artifacts/', 'eslint.config.mjs'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', 'jest.config.js', 'scripts/*.js', 'test/support/*.js', 'bench/*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    // No regular expression in the service may take more than linear time on what a client sends: a
    // pattern that backtracks over its own input (two quantifiers that can share characters) or that is
    // tried again at every position over the same run (an unanchored `x+$`) took seconds on a 32 KB cell
    // or a 100 KB price. These two rules find both kinds.
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.spec.ts'],
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': 'error',
      'regexp/no-super-linear-move': ['error', { ignoreSticky: true, ignorePartial: false }],
    },
  },
  {
    // Tests read HTTP answers (supertest's `res.body` is `any`) and Socket.IO payloads field by field and
    // let `expect` check them; typing each answer again in the tests would only restate the DTOs. The
    // rest of the type-checked rules apply to tests as to the code.
    files: ['test/**/*.ts', 'src/**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
      // Fakes and fixtures return promises (or async generators) without awaiting anything, by design.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // The few plain CommonJS scripts (jest config and reporters, the build check) carry no types to check.
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        __dirname: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
      },
    },
  },
  {
    // The operator and viewer pages: browser ES modules, served as they are (no build, no type information).
    files: ['public/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      sourceType: 'module',
      parserOptions: { projectService: false, project: null },
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'location',
          'history',
          'navigator',
          'sessionStorage',
          'fetch',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'FormData',
          'Intl',
          'CSS',
          'Node',
          'TextDecoder',
          'atob',
          'URLSearchParams',
          'URL',
          'console',
        ].map((g) => [g, 'readonly']),
      ),
    },
  },
);
