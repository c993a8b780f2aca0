#!/usr/bin/env node
// `npx a2a …` (package.json "bin"): runs the TypeScript client CLI through tsx (decision 0016).
import { register } from 'tsx/esm/api';

register();
// `a2a list | head` closes the pipe early: that is not an error.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});
const { main } = await import('../infra/client/cli.ts');
process.exitCode = await main(process.argv.slice(2));
