import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors.js';
import { normalizeStatus, type StatusInput } from '../../src/providers/status.js';

describe('normalizeStatus', () => {
  it.each<[StatusInput, string]>([
    [{ provider: 'github', state: 'open' }, 'todo'],
    [{ provider: 'github', state: 'open', labels: ['bug'] }, 'todo'],
    [{ provider: 'github', state: 'open', labels: ['bug', 'In Progress'] }, 'in_progress'],
    [{ provider: 'github', state: 'open', labels: ['in-progress'] }, 'in_progress'],
    [{ provider: 'github', state: 'OPEN', labels: ['in_progress'] }, 'in_progress'],
    [{ provider: 'github', state: 'closed', stateReason: 'not_planned' }, 'cancelled'],
    [{ provider: 'github', state: 'closed', stateReason: 'completed' }, 'done'],
    [{ provider: 'github', state: 'closed', stateReason: null }, 'done'],
    [{ provider: 'github', state: 'closed', stateReason: 'reopened', labels: ['in progress'] }, 'done'],
    [{ provider: 'linear', stateType: 'backlog' }, 'todo'],
    [{ provider: 'linear', stateType: 'unstarted' }, 'todo'],
    [{ provider: 'linear', stateType: 'triage' }, 'todo'],
    [{ provider: 'linear', stateType: 'started' }, 'in_progress'],
    [{ provider: 'linear', stateType: 'completed' }, 'done'],
    [{ provider: 'linear', stateType: 'canceled' }, 'cancelled'],
    [{ provider: 'linear', stateType: 'Cancelled' }, 'cancelled'],
    [{ provider: 'jira', category: 'new' }, 'todo'],
    [{ provider: 'jira', category: 'indeterminate' }, 'in_progress'],
    [{ provider: 'jira', category: 'done' }, 'done'],
    [{ provider: 'jira', category: 'done', resolution: 'Done' }, 'done'],
    [{ provider: 'jira', category: 'done', resolution: "Won't Do" }, 'cancelled'],
    [{ provider: 'jira', category: 'done', resolution: 'Won\u2019t Do' }, 'cancelled'],
    [{ provider: 'jira', category: 'done', resolution: 'Duplicate' }, 'cancelled'],
    [{ provider: 'jira', category: 'done', resolution: 'cannot reproduce' }, 'cancelled'],
    [{ provider: 'jira', category: 'indeterminate', resolution: 'Duplicate' }, 'in_progress'],
    [{ provider: 'jira', category: 'new', resolution: "Won't Do" }, 'todo'],
  ])('%j → %s', (input, expected) => {
    expect(normalizeStatus(input)).toBe(expected);
  });

  it.each<[StatusInput, string]>([
    [{ provider: 'github', state: 'merged' }, 'status.state'],
    [{ provider: 'linear', stateType: 'paused' }, 'status.stateType'],
    [{ provider: 'linear', stateType: 'toString' }, 'status.stateType'],
    [{ provider: 'jira', category: 'undefined' }, 'status.category'],
    [{ provider: 'gitlab', state: 'opened' } as unknown as StatusInput, 'status.provider'],
  ])('refuses %j naming %s', (input, field) => {
    const err = (() => {
      try {
        return normalizeStatus(input);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe(field);
  });
});
