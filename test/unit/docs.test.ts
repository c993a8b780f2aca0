import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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
