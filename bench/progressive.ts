import { parseArgs } from 'node:util';
import { startLocalStack } from '../infra/local/local-stack.ts';
import { parseConfig } from '../shared/config/config.ts';
import { benchConfig, benchTokens } from './lib/bench-config.ts';
import { Meter } from './lib/meter.ts';
import { conversationPhase, progressiveOutputPhase } from './lib/progressive-phases.ts';

/**
 * Issue 37's figures alone (the same phases `npm run bench` runs, bench/lib/progressive-phases.ts),
 * on a local stack of their own, as two JSON lines:
 *
 * - progressive output at 1 client (scripted `stream` provider, `--words` words at `--pace-ms` a
 *   word, the default cadence 1,000 ms / 4,096 B): time from the request to the first committed
 *   chunk on the SSE stream, chunk → SSE latency, chunks per task, write units per task with and
 *   without progressive output (same provider) and so per chunk;
 * - a conversation of `--turns` turns of 20 KB messages: write units of every turn.
 *
 * Run it alone, like `npm run bench`:
 *   npx tsx bench/progressive.ts [--tasks 20] [--words 120] [--pace-ms 25] [--turns 50]
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '20' },
    words: { type: 'string', default: '120' },
    'pace-ms': { type: 'string', default: '25' },
    turns: { type: 'string', default: '50' },
  },
});

const meter = new Meter();
meter.install();
const config = parseConfig({
  ...benchConfig,
  providers: {
    ...benchConfig.providers,
    streamer: { type: 'scripted', behavior: 'stream', paceMs: Number(values['pace-ms']) },
  },
});
const stack = await startLocalStack({ port: 0, config, prefix: `progressive-${Date.now()}`, log: () => {} });
try {
  const shared = { baseUrl: stack.baseUrl, token: benchTokens.main, meter };
  const progressive = await progressiveOutputPhase({
    ...shared,
    tasks: Number(values.tasks),
    words: Number(values.words),
  });
  console.log(
    JSON.stringify({
      phase: 'progressive output, 1 client',
      paceMs: Number(values['pace-ms']),
      ...progressive,
    }),
  );
  const conversation = await conversationPhase({ ...shared, turns: Number(values.turns) });
  console.log(JSON.stringify({ phase: 'conversation of 20 KB messages', ...conversation }));
} finally {
  await stack.stop();
  meter.uninstall();
}
process.exit(0);
