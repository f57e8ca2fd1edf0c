// Unit specs live beside the code (src, *.spec.ts); e2e specs boot the real app (test, *.e2e-spec.ts).
// Transpile only (fast); `npm run typecheck` type-checks everything, tests included.
const tsJest = ['ts-jest', { tsconfig: '<rootDir>/tsconfig.spec.json', diagnostics: false }];

module.exports = {
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  globalSetup: '<rootDir>/test/support/global-setup.js',
  projects: [
    {
      displayName: 'unit',
      rootDir: __dirname,
      testEnvironment: 'node',
      testMatch: ['<rootDir>/src/**/*.spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
    },
    {
      displayName: 'e2e',
      rootDir: __dirname,
      testEnvironment: 'node',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
    },
  ],
};
