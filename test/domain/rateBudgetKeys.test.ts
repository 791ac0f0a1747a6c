import { expect, it } from 'vitest';
import { budgetKeyOf, parseBudgetKey } from '../../src/domain/rateBudgetKeys.js';

it('a budget key names its provider and holder, and round-trips', () => {
  const key = budgetKeyOf('github', 'app-12-installation-34@api.github.com');
  expect(parseBudgetKey(key)).toEqual({ provider: 'github', holder: 'app-12-installation-34@api.github.com' });
});

it('a key with a control character in it names no budget (it could never have been stored)', () => {
  for (const holder of ['fuzz-a.v1\u0000', 'a\u0007b', 'x\u007f']) {
    expect(parseBudgetKey(budgetKeyOf('github', holder))).toBeNull();
  }
  expect(parseBudgetKey(budgetKeyOf('git\u0000hub', 'h'))).toBeNull();
});

it('a key that is not canonical base64url, or has no holder, names no budget', () => {
  expect(parseBudgetKey('not base64!')).toBeNull();
  expect(parseBudgetKey(Buffer.from('github\n').toString('base64url'))).toBeNull();
  expect(parseBudgetKey(Buffer.from('github').toString('base64url'))).toBeNull();
});
