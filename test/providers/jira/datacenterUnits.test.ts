/**
 * Jira Data Center's pure parts: wiki markup as text, the sprint field's text form, the
 * `deployment` setting with a context path, and the request paths of each deployment.
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/errors.js';
import { jiraApi } from '../../../src/providers/jira/api.js';
import { urlOf } from '../../../src/providers/jira/client.js';
import { parseJiraConfig } from '../../../src/providers/jira/config.js';
import { workItemRow } from '../../../src/providers/jira/mapping.js';
import { wikiToText } from '../../../src/providers/jira/wiki.js';

describe('wikiToText', () => {
  it('keeps the visible text of inline marks, links, mentions and escapes', () => {
    expect(wikiToText('*fix* the _login_ -bug- +now+ ^2^ ~x~ ??cite?? {{code()}}')).toBe(
      'fix the login bug now 2 x cite code()',
    );
    expect(wikiToText('see [the docs|https://x.example/a] and [https://y.example] cc [~ada0]')).toBe(
      'see the docs and https://y.example cc @ada0',
    );
    expect(wikiToText('not \\*bold\\* and a-b-c stays; snake_case_name stays')).toBe(
      'not *bold* and a-b-c stays; snake_case_name stays',
    );
    expect(wikiToText('line one\\\\line two !screen.png|thumbnail!')).toBe('line one\nline two');
  });

  it('drops block prefixes, list markers, rules and panel marks; keeps code as written', () => {
    const markup = [
      'h2. Steps',
      '# open *it*',
      '## then this',
      '* a bullet',
      '----',
      'bq. quoted',
      '{quote}said{quote}',
      '{color:red}red{color}',
      '||a||b||',
      '|1|2|',
      '{code:java}',
      'int *x* = 1;',
      '{code}',
    ].join('\n');
    expect(wikiToText(markup)).toBe(
      'Steps\nopen it\nthen this\na bullet\n\nquoted\nsaid\nred\na\tb\n1\t2\n\nint *x* = 1;',
    );
  });

  it('null for what is not a string', () => {
    expect(wikiToText(null)).toBeNull();
    expect(wikiToText({ type: 'doc' })).toBeNull();
  });
});

describe('Data Center sprint field', () => {
  const scope = { orgId: 'o', integrationId: 'i', provider: 'jira', runId: 'r', unitId: 'u', siteUrl: 'https://j.x' };
  const issue = (sprints: unknown[]) => ({ id: '1', key: 'ENG-1', fields: { customfield_10100: sprints } });
  const text = (id: number, state: string, name: string) =>
    `com.atlassian.greenhopper.service.sprint.Sprint@1f[id=${id},rapidViewId=3,state=${state},name=${name},` +
    `startDate=2026-01-01T00:00:00.000Z,endDate=<null>,completeDate=<null>,sequence=${id},goal=<null>]`;

  it('reads the text form: the active sprint, else the last; a name with a comma whole', () => {
    const row = (s: unknown[]) => workItemRow(scope as never, issue(s), [], new Map(), 'customfield_10100').milestone;
    expect(row([text(1, 'CLOSED', 'Sprint 1'), text(2, 'ACTIVE', 'Sprint 2, late'), text(3, 'FUTURE', 'S3')])).toBe(
      'Sprint 2, late',
    );
    expect(row([text(1, 'CLOSED', 'Sprint 1')])).toBe('Sprint 1');
    expect(row(['garbage'])).toBeNull();
  });
});

describe('Jira config: deployment', () => {
  it('cloud by default (absent from the parsed config); datacenter takes a context path', () => {
    expect(parseJiraConfig({ siteUrl: 'https://acme.atlassian.net' }).deployment).toBeUndefined();
    expect(parseJiraConfig({ siteUrl: 'https://acme.atlassian.net', deployment: 'cloud' }).deployment).toBeUndefined();
    const dc = parseJiraConfig({ siteUrl: 'https://jira.example.com/jira/', deployment: 'datacenter' });
    expect(dc).toMatchObject({ siteUrl: 'https://jira.example.com/jira', deployment: 'datacenter' });
    expect(parseJiraConfig({ siteUrl: 'https://jira.example.com', deployment: 'datacenter' }).siteUrl).toBe(
      'https://jira.example.com',
    );
  });

  it('refuses a path on Cloud, a bad deployment, odd context paths and plain http off loopback', () => {
    const field = (config: unknown) => {
      try {
        parseJiraConfig(config);
      } catch (err) {
        if (err instanceof ValidationError) return err.message;
      }
      return 'accepted';
    };
    expect(field({ siteUrl: 'https://acme.atlassian.net/jira' })).toContain('config.siteUrl');
    expect(field({ siteUrl: 'https://j.example.com', deployment: 'server' })).toContain('config.deployment');
    for (const siteUrl of ['https://j.example.com/jira/rest/api/2', 'https://j.example.com/a%20b']) {
      expect(field({ siteUrl, deployment: 'datacenter' }), siteUrl).toContain('config.siteUrl');
    }
    expect(field({ siteUrl: 'http://jira.example.com/jira', deployment: 'datacenter' })).toContain('https');
  });
});

describe('jiraApi', () => {
  it('Cloud: REST v3 and token search; Data Center: REST v2 under the context path, no changelog endpoint', () => {
    const cloud = jiraApi({ siteUrl: 'https://acme.atlassian.net' });
    expect([cloud.search, cloud.myself, cloud.changelog('7'), cloud.agile('board')]).toEqual([
      '/rest/api/3/search/jql',
      '/rest/api/3/myself',
      '/rest/api/3/issue/7/changelog',
      '/rest/agile/1.0/board',
    ]);
    const dc = jiraApi({ siteUrl: 'https://jira.example.com/jira', deployment: 'datacenter' });
    expect(dc.changelog('7')).toBeNull();
    // The client keeps the site's path (client.ts urlOf) or the paths carry it: never both, never neither.
    expect(urlOf('https://jira.example.com/jira', dc.search)).toBe('https://jira.example.com/jira/rest/api/2/search');
    expect(urlOf('https://jira.example.com/jira', dc.issue('ENG-1'))).toBe(
      'https://jira.example.com/jira/rest/api/2/issue/ENG-1',
    );
    expect(urlOf('https://jira.example.com/jira', dc.agile('board'))).toBe(
      'https://jira.example.com/jira/rest/agile/1.0/board',
    );
  });
});
