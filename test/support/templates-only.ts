/**
 * CDK context for an app whose tests read its synthesized templates only: no stack is bundled
 * (CDK's `aws:cdk:bundling-stacks`), so no esbuild run per function — the bulk of a synth's time.
 * What a bundle holds is tested where bundles are built: test/infra/house-bundles.test.ts (every
 * function, and HouseFunction's bundle byte for byte as esbuild's) and test/infra/stacks.test.ts
 * "bundles an ESM module with the require banner and a source map".
 */
export const templatesOnly = { 'aws:cdk:bundling-stacks': [] as string[] };
