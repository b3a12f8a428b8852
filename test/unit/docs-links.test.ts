import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CRM_KINDS } from '../../src/connectors/crm/kinds.js';
import { CRMS } from '../../src/connectors/crm/registry.js';
import { HISTORY_SEQUENCERS, PUSH_SEQUENCERS } from '../../src/connectors/sequencers/registry.js';
import { sandboxDefaultPath } from '../../src/sandbox/system-table.js';

/**
 * The documentation's relative links: every `[text](target)` in README.md, bench/README.md, test/README.md
 * and docs/*.md names a file or folder that exists, and a `#anchor` into a markdown file names one of its
 * headings (GitHub's slugs). Links leaving the repository (`../shared/...`) are not checked: a clone
 * elsewhere does not have them. Also: the README's configuration table lists every variable src/config.ts
 * reads (its comment asks to keep the two together), those the CRM and sequencer definitions name among them.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function documentationFiles(): string[] {
  const docs = readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', 'bench/README.md', 'test/README.md', ...docs];
}

// ---------------------------------------------------------------------------------------------
// Markdown, as far as links and headings go

/** The lines outside fenced code blocks (``` or ~~~), with their 1-based numbers. */
function proseLines(markdown: string): Array<{ line: number; text: string }> {
  const lines: Array<{ line: number; text: string }> = [];
  let fence: string | null = null;
  markdown.split('\n').forEach((text, i) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(text)?.[1];
    if (fence === null && marker) fence = marker;
    else if (fence !== null && marker && marker[0] === fence[0] && marker.length >= fence.length && text.trim() === marker) fence = null;
    else if (fence === null) lines.push({ line: i + 1, text });
  });
  return lines;
}

/** A line without its code spans (`` `x` ``, ``` ``x`` ```): what they hold is not a link. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1/g, '');
}

/** The targets of inline links and images, and of reference definitions, outside code. */
function linksOf(markdown: string): Array<{ line: number; target: string }> {
  const links: Array<{ line: number; target: string }> = [];
  for (const { line, text } of proseLines(markdown)) {
    const prose = withoutCodeSpans(text);
    for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ line, target: match[1]! });
    const definition = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/.exec(prose);
    if (definition) links.push({ line, target: definition[1]! });
  }
  return links;
}

/** GitHub's anchor for a heading's text: lowercase, punctuation dropped, each space a hyphen. */
function githubSlug(heading: string): string {
  const text = heading
    .replace(/(`+)([\s\S]*?)\1/g, '$2') // code spans keep their text
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images keep their text
    .replace(/<[^>]+>/g, ''); // inline HTML
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a markdown file's ATX headings give, a repeated one suffixed `-1`, `-2`, ... as GitHub does. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(text);
    if (!heading) continue;
    const slug = githubSlug(heading[1]!);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** What is wrong with the relative links of `files` (paths from `root`), one line each. */
function brokenLinks(root: string, files: string[]): string[] {
  const problems: string[] = [];
  for (const file of files) {
    const source = path.join(root, file);
    for (const { line, target } of linksOf(readFileSync(source, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // https:, mailto:, ...
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
      const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
      const resolved = pathPart === '' ? source : path.resolve(path.dirname(source), pathPart);
      const where = `${file}:${line}: ${target}`;
      if (path.relative(root, resolved).startsWith('..')) continue; // outside the repository
      if (!existsSync(resolved)) {
        problems.push(`${where}: no such file`);
        continue;
      }
      if (anchor !== null && resolved.endsWith('.md') && !headingAnchors(readFileSync(resolved, 'utf8')).has(anchor)) {
        problems.push(`${where}: no heading with that anchor in ${path.relative(root, resolved)}`);
      }
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------

describe("the documentation's relative links", () => {
  it('all reach an existing file, and a heading where they name one', () => {
    const files = documentationFiles();
    expect(files).toEqual(expect.arrayContaining(['README.md', 'bench/README.md', 'test/README.md', 'docs/decisions.md']));
    expect(brokenLinks(ROOT, files)).toEqual([]);
  });
});

describe('the link check', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'docs-links-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reports a missing file and a missing heading, and nothing else', () => {
    // Setup
    mkdirSync(path.join(dir, 'docs'));
    writeFileSync(
      path.join(dir, 'docs/page.md'),
      ['# Page', '', '## How to add a job / a CRM', '', '## Page', '', '```md', '## In a code block', '```'].join('\n'),
    );
    writeFileSync(
      path.join(dir, 'README.md'),
      [
        '# Readme',
        '[ok](docs/page.md) [ok](docs/page.md#how-to-add-a-job--a-crm) [ok](docs/page.md#page-1) [ok](#readme) [ok](docs/)',
        '[ok](https://example.com/x.md) [ok](../outside/x.md) `[not a link](nowhere.md)`',
        '[gone](docs/gone.md) [bad anchor](docs/page.md#in-a-code-block) [bad](#nope)',
        '```',
        '[in code](nowhere.md)',
        '```',
      ].join('\n'),
    );

    // Action
    const problems = brokenLinks(dir, ['README.md', 'docs/page.md']);

    // Assertions
    expect(problems).toEqual([
      'README.md:4: docs/gone.md: no such file',
      'README.md:4: docs/page.md#in-a-code-block: no heading with that anchor in docs/page.md',
      'README.md:4: #nope: no heading with that anchor in README.md',
    ]);
  });

  it.each([
    ['How to add a job', 'how-to-add-a-job'],
    ['The sandbox: see it work without a CRM account', 'the-sandbox-see-it-work-without-a-crm-account'],
    ['`npm run bench:api`: REST reads against the same SQL', 'npm-run-benchapi-rest-reads-against-the-same-sql'],
    ['`npm run bench:blocklists`: a 100,000-entry HubSpot list pushed to Instantly', 'npm-run-benchblocklists-a-100000-entry-hubspot-list-pushed-to-instantly'],
    ['Bulk history: `npm run admin -- generate-history`', 'bulk-history-npm-run-admin----generate-history'],
    ['Connector kit and HubSpot 2026-03 (issue 29)', 'connector-kit-and-hubspot-2026-03-issue-29'],
    ['`syncs__drain` [runs](x.md)', 'syncs__drain-runs'],
  ])('slugs %j as GitHub does', (heading, slug) => {
    expect(githubSlug(heading)).toBe(slug);
  });
});

describe("the README's configuration table", () => {
  /** The rows of the README's `## Configuration` table: the name in the first column, and the whole line. */
  function readmeRows(): Array<{ name: string; row: string }> {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const section = /^## Configuration\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1] ?? '';
    return [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|.*$/gm)].map((m) => ({ name: m[1]!, row: m[0] }));
  }

  /** The names of the first column of the README's `## Configuration` table. */
  function readmeVariables(): string[] {
    return readmeRows().map(({ name }) => name);
  }

  function readmeRow(name: string): string | undefined {
    return readmeRows().find((row) => row.name === name)?.row;
  }

  /** The outside systems' base URLs the definitions name: each CRM's API, each push sequencer's, each CRM's own consent host. */
  const endpoints = [
    ...CRM_KINDS.map((kind) => CRMS[kind].endpoint),
    ...PUSH_SEQUENCERS.flatMap((sequencer) => sequencer.blocklistPush.endpoint ?? []),
    // A history's endpoint is its push's where it has one (one variable).
    ...HISTORY_SEQUENCERS.flatMap(({ history, blocklistPush }) => (history.endpoint && history.endpoint !== blocklistPush?.endpoint ? [history.endpoint] : [])),
    ...CRM_KINDS.flatMap((kind) => CRMS[kind].oauth.authorize.endpoint ?? []),
  ];
  /** The client id and secret variables of each CRM's OAuth app. */
  const apps = CRM_KINDS.flatMap((kind) => [CRMS[kind].oauth.app.clientIdEnv, CRMS[kind].oauth.app.clientSecretEnv]);

  /**
   * Every variable the service reads: the keys of src/config.ts's `envSchema`, and those the definitions
   * name (its `...definitionVariables()`: each CRM's endpoint and budget, each push sequencer's endpoint,
   * each CRM's consent host and OAuth app).
   */
  function configVariables(): string[] {
    const config = readFileSync(path.join(ROOT, 'src/config.ts'), 'utf8');
    const schema = /^const envSchema = z\.object\(\{\n([\s\S]*?)^\}\);/m.exec(config)?.[1] ?? '';
    expect(schema).toMatch(/^ {2}\.\.\.definitionVariables\(\),$/m);
    const own = [...schema.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!);
    return [
      ...own,
      ...endpoints.map((endpoint) => endpoint.env),
      ...CRM_KINDS.map((kind) => CRMS[kind].budget.env),
      ...HISTORY_SEQUENCERS.map((sequencer) => sequencer.history.budget.env),
      ...apps,
    ];
  }

  it('stays in the README and lists every variable src/config.ts reads, and no other but Node its own', () => {
    const documented = readmeVariables();
    const read = configVariables();
    expect(read.length).toBeGreaterThan(30);
    expect(documented.filter((name) => !read.includes(name))).toEqual(['NODE_EXTRA_CA_CERTS']);
    expect(read.filter((name) => !documented.includes(name))).toEqual([]);
    expect(new Set(documented).size).toBe(documented.length);
  });

  it.each(endpoints.map((endpoint) => [endpoint.env, endpoint] as const))(
    'gives %s the default, sandbox default and description its definition names',
    (env, endpoint) => {
      expect(readmeRow(env)).toBe(
        `| \`${env}\` | \`${endpoint.default}\` (with \`SANDBOX\`: \`<BASE_URL>${sandboxDefaultPath(env)}\`) | ${endpoint.description} |`,
      );
    },
  );

  it.each(CRM_KINDS.map((kind) => [CRMS[kind].budget.env, CRMS[kind].budget] as const))(
    'gives %s the default and bounds its definition names',
    (env, budget) => {
      const row = readmeRow(env);
      expect(row).toMatch(new RegExp(`^\\| \`${env}\` \\| \`${budget.default}\` \\| `));
      expect(row).toContain(`(0-${budget.max};`);
    },
  );
});
