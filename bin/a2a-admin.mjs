#!/usr/bin/env node
// `npx a2a-admin …` (package.json "bin"): runs the TypeScript admin CLI through tsx (decision 0016).
import { register } from 'tsx/esm/api';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
register();
// `a2a list | head` closes the pipe early: that is not an error.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});
const { main } = await import('../infra/admin/cli.ts');
process.exitCode = await main(process.argv.slice(2));
