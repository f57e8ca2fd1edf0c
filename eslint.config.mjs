// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'data/', 'test/artifacts/', 'eslint.config.mjs'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.js', 'jest.config.js', 'scripts/*.js', 'test/support/*.js'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', process: 'readonly', __dirname: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly' } },
  },
  {
    // The operator and viewer pages: browser ES modules, served as they are (no build, no type information).
    files: ['public/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      sourceType: 'module',
      parserOptions: { projectService: false, project: null },
      globals: Object.fromEntries(
        ['window', 'document', 'location', 'history', 'navigator', 'sessionStorage', 'fetch', 'setTimeout', 'clearTimeout', 'Intl', 'CSS', 'Node', 'TextDecoder', 'atob', 'URLSearchParams', 'URL', 'console'].map((g) => [g, 'readonly']),
      ),
    },
  },
);
