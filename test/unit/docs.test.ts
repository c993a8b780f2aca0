import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../infra/house-function.ts';
import { isDeadLetterQueue } from '../../infra/stateful-stack.ts';
import { queueDefinitions } from '../../shared/adapters/dynamodb/tables.ts';
import { configSchema, providerConfigSchema } from '../../shared/config/config.ts';
import { metricCatalog } from '../../shared/domain/metrics.ts';

/**
 * The operator docs against the code (decision 0020): every setting of the configuration schema
 * is documented with its default, every metric and every alarm has its entry. Adding a setting,
 * a metric or a dead-letter queue without documenting it fails here.
 */

const read = (name: string): string => readFileSync(join(REPO_ROOT, 'docs', name), 'utf8');
const configuration = read('configuration.md');
const operations = read('operations.md');

interface Def {
  readonly type: string;
  readonly innerType?: unknown;
  readonly shape?: Record<string, unknown>;
  readonly valueType?: unknown;
  readonly options?: unknown[];
  readonly element?: unknown;
}

/** Every setting path of a zod schema: `a.b`, `<id>` for record keys, `[]` for array items. */
const settingPaths = (schema: unknown, prefix = '', out: string[] = []): string[] => {
  const def = (schema as { _zod: { def: Def } })._zod.def;
  if (def.type === 'default' || def.type === 'optional') return settingPaths(def.innerType, prefix, out);
  if (def.type === 'object') {
    for (const [key, value] of Object.entries(def.shape ?? {})) {
      const path = prefix ? `${prefix}.${key}` : key;
      out.push(path);
      settingPaths(value, path, out);
    }
  }
  if (def.type === 'record') settingPaths(def.valueType, `${prefix}.<id>`, out);
  if (def.type === 'union') for (const option of def.options ?? []) settingPaths(option, prefix, out);
  if (def.type === 'array') settingPaths(def.element, `${prefix}[]`, out);
  return out;
};

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The table row documenting a setting (its first cell is the setting in backticks). */
const rowOf = (doc: string, setting: string): string | undefined =>
  doc.split('\n').find((line) => line.startsWith(`| \`${setting}\``));

const normalized = (text: string): string => text.replace(/\s+/g, '');

const leafValues = (value: unknown, prefix: string, out: Map<string, unknown>): Map<string, unknown> => {
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > 0) {
    for (const [key, inner] of Object.entries(value))
      leafValues(inner, prefix ? `${prefix}.${key}` : key, out);
  } else {
    out.set(prefix, value);
  }
  return out;
};

describe('docs/configuration.md', () => {
  it('names every setting of the configuration schema', () => {
    const paths = settingPaths(configSchema);
    expect(paths.length).toBeGreaterThan(60);
    for (const path of paths) {
      if (path.includes('<id>') || path.includes('[]')) {
        const setting = path.split(/\.|\[\]\.?/).at(-1) ?? path;
        expect(configuration, path).toContain(`\`${setting}\``);
      } else {
        expect(configuration, path).toMatch(new RegExp(`\`${escapeRegExp(path)}[\`.]`));
      }
    }
  });

  it('gives the default the code applies for every top-level and nested setting', () => {
    const defaults = leafValues(configSchema.parse({ providers: {}, profiles: {} }), '', new Map());
    expect(defaults.size).toBeGreaterThan(15);
    for (const [path, value] of defaults) {
      // Required, no default; retention's 30/7 days are the domain's, documented per key.
      if (['providers', 'profiles', 'privacy.retention'].includes(path)) continue;
      const row = rowOf(configuration, path);
      expect(row, `a row for ${path}`).toBeDefined();
      expect(normalized(row ?? ''), path).toContain(normalized(`\`${JSON.stringify(value)}\``));
    }
  });

  it('gives the default of every profile and provider setting', () => {
    const profile = configSchema.parse({
      providers: { p: { type: 'scripted' } },
      profiles: { x: { name: 'n', description: 'd', providers: ['p'] } },
    }).profiles.x;
    for (const [setting, value] of Object.entries(profile ?? {})) {
      if (['name', 'description', 'providers'].includes(setting)) continue;
      const row =
        rowOf(configuration, setting) ??
        configuration.split('\n').find((line) => line.includes(`\`${setting}\``));
      expect(normalized(row ?? ''), setting).toContain(normalized(`\`${JSON.stringify(value)}\``));
    }
    for (const provider of [
      { type: 'scripted' },
      { type: 'bedrock', model: 'm' },
      { type: 'openai', baseUrl: 'https://example.com/v1', model: 'm' },
    ]) {
      const parsed = providerConfigSchema.parse(provider);
      const row = rowOf(configuration, provider.type) ?? '';
      for (const [setting, value] of Object.entries(parsed)) {
        if (setting === 'type' || setting === 'model' || setting === 'baseUrl') continue;
        expect(row, `${provider.type}.${setting}`).toContain(`\`${setting}\``);
        expect(normalized(row), `${provider.type}.${setting}`).toContain(
          normalized(`\`${JSON.stringify(value)}\``),
        );
      }
    }
  });
});

describe('docs/operations.md', () => {
  it('explains every application metric', () => {
    for (const name of Object.keys(metricCatalog)) expect(operations, name).toContain(`\`${name}\``);
  });

  it('has the runbook section every alarm description points to', () => {
    const sections = [
      ...queueDefinitions.filter(isDeadLetterQueue).map((definition) => definition.id),
      'Iterator age',
      'Error rate',
    ];
    for (const section of sections) expect(operations, section).toMatch(new RegExp(`^### ${section}$`, 'm'));
    const monitoring = readFileSync(join(REPO_ROOT, 'infra/monitoring.ts'), 'utf8');
    for (const pointer of monitoring.matchAll(/docs\/operations\.md "([^"$]+)"/g)) {
      expect(sections).toContain(pointer[1]);
    }
  });
});

/**
 * The repository explains itself: what it cites is in it. Every text file tracked by git is read
 * (bench/results are generated reports); a citation of a document outside the repository, a
 * `docs/…` path or a relative Markdown link that does not resolve, or a decision record that
 * neither exists nor has its number reserved in docs/decisions/README.md fails here.
 */
describe('citations', () => {
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: REPO_ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((path) => /\.(ts|js|mjs|md|json|html|css|sh|ya?ml)$/.test(path))
    .filter((path) => !path.startsWith('bench/results/') && path !== 'package-lock.json')
    .filter((path) => existsSync(join(REPO_ROOT, path)));
  const files = tracked.map((path) => ({ path, text: readFileSync(join(REPO_ROOT, path), 'utf8') }));
  const index = read('decisions/README.md');
  const records = readdirSync(join(REPO_ROOT, 'docs', 'decisions')).filter((name) =>
    /^\d{4}-.*\.md$/.test(name),
  );
  const recordNumbers = new Set(records.map((name) => name.slice(0, 4)));
  const indexRows = new Map(
    [...index.matchAll(/^\| \[?(\d{4})\]?(?:\([^)]*\))? \| [^|]* \| ([^|]*) \|/gm)].map((row) => [
      row[1]!,
      row[2]!.trim(),
    ]),
  );

  it('cites no document that lives outside the repository', () => {
    // Spelled in pieces so that this file does not match itself.
    const outside = new RegExp(
      `\\b(${['DESIGN', 'A2A', 'LOCAL-STACK', 'STYLE'].map((name) => `${name}\\.md`).join('|')}|${'DESIGN'} §|ADR-\\d+)`,
    );
    const found = files
      .filter(({ text }) => outside.test(text))
      .map(({ path, text }) => `${path}: ${outside.exec(text)?.[0]}`);
    expect(found).toEqual([]);
  });

  it("cites only docs/ files that exist (a path qualified by another repository is that repository's)", () => {
    const missing = files.flatMap(({ path, text }) =>
      [...text.matchAll(/\bdocs\/[\w./-]*\w\.md\b/g)]
        .filter(
          (match) => !/a2aproject\/\S+\s`?$/.test(text.slice(Math.max(0, match.index - 40), match.index)),
        )
        .map((match) => match[0])
        .filter((cited) => !existsSync(join(REPO_ROOT, cited)))
        // A record being written today may be cited before it lands, if its number is reserved.
        .filter((cited) => {
          const number = /^docs\/decisions\/(\d{4})-/.exec(cited)?.[1] ?? '';
          return !(indexRows.has(number) && !recordNumbers.has(number));
        })
        .map((cited) => `${path}: ${cited}`),
    );
    expect(missing).toEqual([]);
  });

  it('links only to files that exist (relative Markdown links)', () => {
    const broken = files
      .filter(({ path }) => path.endsWith('.md'))
      .flatMap(({ path, text }) =>
        [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
          .map((match) => match[1]!)
          .filter((target) => !/^[a-z]+:/.test(target))
          .filter((target) => !existsSync(join(REPO_ROOT, dirname(path), target)))
          .map((target) => `${path}: ${target}`),
      );
    expect(broken).toEqual([]);
  });

  it('cites only decision records that exist or whose number is reserved in the index', () => {
    const cited = files.flatMap(({ path, text }) =>
      [
        ...text.matchAll(/\b[Dd]ecisions? (\d{4}(?:(?:, | and | or |–)\d{4})*)/g),
        ...text.matchAll(/docs\/decisions\/(\d{4})/g),
      ].flatMap((match) => match[1]!.split(/, | and | or |–/).map((number) => ({ path, number }))),
    );
    expect(cited.length).toBeGreaterThan(50);
    const unknown = cited
      .filter(({ number }) => !recordNumbers.has(number) && !indexRows.has(number))
      .map(({ path, number }) => `${path}: ${number}`);
    expect(unknown).toEqual([]);
  });

  it('lists every decision record in docs/decisions/README.md, with its status', () => {
    expect(records.length).toBeGreaterThan(40);
    for (const record of records) {
      const number = record.slice(0, 4);
      expect(indexRows.has(number), `${record} has a row in the index`).toBe(true);
      const status = indexRows.get(number) ?? '';
      if (!index.includes(`[${number}](${record})`)) continue; // a reserved row, filled in at the end
      expect(status, record).toMatch(/^(accepted|(superseded|amended) by \d{4}(, \d{4})*)$/);
      for (const successor of status.match(/\d{4}/g) ?? []) {
        expect(recordNumbers.has(successor) || indexRows.has(successor), `${record}: ${successor}`).toBe(
          true,
        );
      }
      const header = readFileSync(join(REPO_ROOT, 'docs', 'decisions', record), 'utf8')
        .split('\n')
        .slice(0, 6)
        .join('\n');
      if (status.startsWith('superseded') || status.startsWith('amended')) {
        expect(header, `${record}'s own header says ${status}`).toContain(status);
      }
    }
  });
});
