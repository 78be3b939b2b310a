// Jest's default configuration (each test file in a `vm` realm, testEnvironment 'node'), with a setup file.
module.exports = { setupFiles: ['./setup.cjs'], testMatch: ['<rootDir>/realm.jest.cjs'] }
