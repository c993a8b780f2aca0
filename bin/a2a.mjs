#!/usr/bin/env node
// `npx a2a …` (package.json "bin"): runs the TypeScript client CLI through tsx (decision 0016).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../infra/client/cli.ts');
process.exitCode = await main(process.argv.slice(2));
