// ESLint flat config: typescript-eslint with type information for the TypeScript sources,
// plain (non-type-aware) linting for the few JavaScript files. Formatting is Prettier's job
// (`npm run lint` runs `prettier --check` too), so eslint-config-prettier goes last.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import eslintConfigPrettier from 'eslint-config-prettier/flat';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    // Build output, dependencies, run artefacts; generated bench results.
    ignores: [
      'dist/**',
      'node_modules/**',
      'test-output/**',
      'coverage/**',
      'scratch/**',
      'bench/results/**',
      '.syncrelay/**',
    ],
  },

  // --- TypeScript (src, test, bench, vitest.config.ts): type-aware ------------------------------
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        // tsconfig.test.json is the one program that covers src, test, bench and vitest.config.ts
        // (tsconfig.json only includes src, so the project service would miss test/ and bench/).
        project: ['./tsconfig.test.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The point of this setup: un-awaited work and promise-typed callbacks in the outbox /
      // lease / reconciler paths are exactly the bugs that strand a run.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // Status / trigger / outcome unions are switched over; a new member must not be silently
      // ignored. Defaults: a `default:` clause does not excuse a missing union member.
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      // Numbers and booleans in log / error messages are idiomatic here; objects and unknowns are not.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowNullish: false, allowAny: false },
      ],
      // `_`-prefixed names are deliberately unused (interface-conforming parameters, destructuring).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // ~30 hits, all `async` functions that satisfy a promise-returning interface or callback
      // (in-process broker, fakes, fastify hooks) without awaiting; `async` keeps throw => rejection.
      '@typescript-eslint/require-await': 'off',
      // The only control-character regexes are deliberate input validation (NUL / C0 in tokens, names).
      'no-control-regex': 'off',
      // `const self = this` is used on purpose where prom-client rebinds `this` in collect() callbacks.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['self'] }],
    },
  },
  {
    // Tests and benchmarks poke at JSON bodies, DB rows and mocks: the no-unsafe-* family is mostly
    // noise there (vitest's expect() already checks shapes). Production code keeps them.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Destructuring helper objects (`const { recorder, uninstall } = install()`) is fine in tests.
      '@typescript-eslint/unbound-method': 'off',
      // Consistent with the above: interpolating `any` response fields into test URLs is fine.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowNullish: false, allowAny: true },
      ],
    },
  },

  // --- JavaScript: no type information -------------------------------------------------------------
  {
    // The dashboard is plain browser JS served as a <script type="module">, no build step.
    files: ['src/dashboard/assets/**/*.js'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'module', globals: globals.browser },
  },
  {
    // Node build scripts and this config file.
    files: ['scripts/**/*.mjs', '*.js', '*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'module', globals: globals.node },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    rules: {
      'no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
    },
  },

  // Turns off any stylistic rule that would fight Prettier.
  eslintConfigPrettier,

  // --- After eslint-config-prettier, which turns max-len off ------------------------------------------
  {
    // Prettier wraps code at 120 but leaves long strings, template literals and comments alone;
    // this catches those. Long URLs (in comments, say) are exempt.
    files: ['**/*.ts'],
    rules: {
      'max-len': ['error', { code: 120, ignoreUrls: true }],
    },
  },
);
