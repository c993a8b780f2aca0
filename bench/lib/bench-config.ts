import { defaultConfig, parseConfig } from '../../shared/config/config.ts';

/** The benchmark's bearer tokens: the main client and the two scale owners. */
export const benchTokens = { main: 'bench-main', small: 'bench-s100', large: 'bench-s10k' } as const;

/** The installation every benchmark script drives (bench/run.ts, bench/cpu.ts). */
export const benchConfig = parseConfig({
  privacy: { level: 'metadata', retention: { agentRun: 30, approval: 7 } },
  auth: {
    tokens: {
      [benchTokens.main]: { tenant: 'bench', principal: 'main' },
      [benchTokens.small]: { tenant: 'bench', principal: 'scale-small' },
      [benchTokens.large]: { tenant: 'bench', principal: 'scale-large' },
    },
  },
  providers: {
    local: { type: 'scripted', behavior: 'echo' },
    tck: { type: 'scripted', behavior: 'tck' },
    // The progressive-output phase's model: the user's text back word by word, 25 ms a word.
    streamer: { type: 'scripted', behavior: 'stream', paceMs: 25 },
  },
  profiles: {
    default: defaultConfig.profiles.default,
    tck: {
      name: 'TCK agent',
      description: 'Scripted TCK scenarios (multi-turn).',
      providers: ['tck'],
      privacyLevel: 'full',
    },
    // bench/lib/progressive-phases.ts: the same streaming model with and without progressive
    // output (the default cadence), so a chunk's cost is the difference.
    progressive: {
      name: 'Progressive output',
      description: 'Writes its answer as it comes (scripted stream).',
      providers: ['streamer'],
      privacyLevel: 'full',
      output: { progressive: true },
    },
    plain: {
      name: 'Plain output',
      description: 'The same model, its answer committed once.',
      providers: ['streamer'],
      privacyLevel: 'full',
    },
  },
  webhooks: { allowLoopback: true },
  // The streaming phase holds --concurrency (20) streams of one caller open at once, and the
  // blocking phases as many blocking sends; the default caps of 10 per caller (decisions 0052,
  // 0131) would refuse half of them.
  limits: { streamsPerCaller: 100, blockingSendsPerCaller: 100 },
});
