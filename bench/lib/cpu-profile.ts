import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the Node side's CPU goes, from a V8 `.cpuprofile` (decision 0035). Each sample is
 * attributed twice: to the innermost *activity* on its stack (a library or emulator, by file
 * path), and to the innermost *repository file* outside node_modules (who asked for the work).
 */

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Innermost match wins; order only breaks ties within one frame. */
const activities: ReadonlyArray<readonly [string, RegExp]> = [
  ['SigV4 signing', /signature-v4|@smithy\/hash-node|@aws-crypto/],
  ['DynamoDB (un)marshalling', /util-dynamodb|client-dynamodb\/dist-cjs\/(?:protocols|index)/],
  [
    'SDK serde (JSON/query protocols)',
    /@aws-sdk\/core\/dist-cjs\/submodules\/protocols|@smithy\/core\/dist-cjs\/submodules\/(?:serde|protocols|cbor)|smithy-client/,
  ],
  ['SDK HTTP handler', /node-http-handler/],
  ['SDK middleware and clients', /@smithy\/|@aws-sdk\//],
  ['zod', /node_modules\/zod\//],
  ['Powertools (logger, metrics)', /aws-lambda-powertools/],
  ['SQS emulator', /infra\/local\/sqs-emulator/],
  ['KMS emulator', /infra\/local\/kms-emulator/],
  ['local pollers', /infra\/local\/(lambda-invocation|sqs-poller|stream-poller)/],
  ['HTTP harness', /infra\/local\/(?:http-harness|lambda-streaming|local-authorizer)/],
  ['bench driver and meter', /\/bench\//],
  ['undici (fetch)', /undici|node:internal\/deps\/undici/],
  ['node http/net', /node:(?:_http|http|net|internal\/(?:http|stream_base|net|streams|js_stream))/],
  ['node crypto', /node:(?:crypto|internal\/crypto)/],
  ['tsx loader', /node_modules\/tsx\//],
];

const categoryOf = (url: string): string | undefined =>
  activities.find(([, pattern]) => pattern.test(url))?.[0];

const repoFile = (url: string): string | undefined => {
  if (!url.startsWith('file://') || url.includes('/node_modules/')) return undefined;
  const match = /\/(shared|functions|infra|bench)\/(.+)$/.exec(url);
  return match ? `${match[1]}/${match[2]}` : undefined;
};

export interface ProfileSummary {
  readonly totalMs: number;
  readonly idleMs: number;
  readonly byActivity: ReadonlyArray<readonly [string, number]>;
  readonly byRepoFile: ReadonlyArray<readonly [string, number]>;
  readonly bySelfFunction: ReadonlyArray<readonly [string, number]>;
}

export const summarizeProfile = (profile: CpuProfile): ProfileSummary => {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  // Per node: its activity and repo file (innermost on its stack), computed once.
  const memo = new Map<number, { activity: string; file: string }>();
  const attribution = (id: number): { activity: string; file: string } => {
    const known = memo.get(id);
    if (known) return known;
    let activity: string | undefined;
    let file: string | undefined;
    for (let at: number | undefined = id; at !== undefined && (!activity || !file); at = parent.get(at)) {
      const url = byId.get(at)?.callFrame.url ?? '';
      activity ??= categoryOf(url);
      file ??= repoFile(url);
    }
    const leaf = byId.get(id)?.callFrame;
    const special = leaf && /^\((?:garbage collector|program|idle)\)$/.test(leaf.functionName);
    const result = special
      ? { activity: leaf.functionName, file: leaf.functionName }
      : {
          activity: activity ?? (file ? 'repository code' : 'other (node internals, V8)'),
          file: file ?? '(no repository frame)',
        };
    memo.set(id, result);
    return result;
  };
  const activity = new Map<string, number>();
  const files = new Map<string, number>();
  const selves = new Map<string, number>();
  let total = 0;
  let idle = 0;
  profile.samples.forEach((id, index) => {
    const ms = (profile.timeDeltas[index] ?? 0) / 1000;
    const frame = byId.get(id)?.callFrame;
    if (frame?.functionName === '(idle)') {
      idle += ms;
      return;
    }
    total += ms;
    const { activity: a, file } = attribution(id);
    activity.set(a, (activity.get(a) ?? 0) + ms);
    files.set(file, (files.get(file) ?? 0) + ms);
    const self = `${frame?.functionName || '(anonymous)'} ${(frame?.url ?? '').replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(shared|functions|infra|bench)\//, '$1/')}:${(frame?.lineNumber ?? 0) + 1}`;
    selves.set(self, (selves.get(self) ?? 0) + ms);
  });
  const sorted = (map: Map<string, number>) => [...map.entries()].sort((a, b) => b[1] - a[1]);
  return {
    totalMs: total,
    idleMs: idle,
    byActivity: sorted(activity),
    byRepoFile: sorted(files),
    bySelfFunction: sorted(selves),
  };
};

export const renderProfileSummary = (summary: ProfileSummary, tasks: number, top = 25): string => {
  const line = ([name, ms]: readonly [string, number]) =>
    `| ${name} | ${(ms / tasks).toFixed(2)} | ${((100 * ms) / summary.totalMs).toFixed(1)} % |`;
  const table = (title: string, rows: ReadonlyArray<readonly [string, number]>) =>
    [`\n${title}\n`, '| | ms/task | share |', '| --- | ---: | ---: |', ...rows.slice(0, top).map(line)].join(
      '\n',
    );
  return [
    `Node CPU sampled: ${(summary.totalMs / tasks).toFixed(1)} ms/task (idle ${(summary.idleMs / 1000).toFixed(1)} s)`,
    table('By activity (innermost library or emulator on the stack)', summary.byActivity),
    table('By repository file (innermost file of this repository on the stack)', summary.byRepoFile),
    table('By function (self time)', summary.bySelfFunction),
  ].join('\n');
};

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const [file, tasks = '1'] = process.argv.slice(2);
  if (!file) throw new Error('usage: tsx bench/lib/cpu-profile.ts <file.cpuprofile> [tasks]');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  process.stdout.write(`${renderProfileSummary(summarizeProfile(profile), Number(tasks), 40)}\n`);
}
