import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../infra/house-function.ts';
import { queueDefinitions } from '../../shared/adapters/dynamodb/tables.ts';

/**
 * What the cost model needs from the deployment, read from the CDK source the same way a
 * reviewer would: each function's memory size (its `HouseFunction` props, or the house default),
 * its event source and batch size, and whether its queue is FIFO. Read as text, so the benchmark
 * does not synthesize (and bundle) the whole app.
 */

export interface FunctionDeployment {
  readonly functionName: string;
  readonly memoryMb: number;
  readonly source?: 'sqs' | 'dynamodb';
  readonly batchSize?: number;
  readonly fifo?: boolean;
}

export interface Deployment {
  readonly houseMemoryMb: number;
  readonly functions: Readonly<Record<string, FunctionDeployment>>;
  /** True when the service stack declares an API Gateway Lambda authorizer. */
  readonly hasAuthorizer: boolean;
}

/** The text from `open` to its matching closing bracket. */
const balanced = (text: string, open: number): string => {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const char = text[i];
    if (char === '(' || char === '{') depth += 1;
    else if (char === ')' || char === '}') {
      depth -= 1;
      if (depth === 0) return text.slice(open, i + 1);
    }
  }
  return text.slice(open);
};

const lowerFirst = (name: string): string => name.charAt(0).toLowerCase() + name.slice(1);

export const readDeployment = (
  serviceStackSource = readFileSync(join(REPO_ROOT, 'infra/service-stack.ts'), 'utf8'),
  houseFunctionSource = readFileSync(join(REPO_ROOT, 'infra/house-function.ts'), 'utf8'),
): Deployment => {
  const houseMemoryMb = Number(/memorySize:\s*(\d+)/.exec(houseFunctionSource)?.[1] ?? 128);
  const functions: Record<string, FunctionDeployment> = {};
  const propertyOf: Record<string, string> = {};
  for (const match of serviceStackSource.matchAll(
    /(?:this\.(\w+)|const (\w+))\s*=\s*new HouseFunction\(this,\s*'(\w+)'/g,
  )) {
    const [, property, local, id] = match;
    const block = balanced(serviceStackSource, (match.index ?? 0) + match[0].length - `'${id}'`.length - 1);
    const memory = /memorySize:\s*(\d+)/.exec(block)?.[1];
    const functionName = lowerFirst(id as string);
    functions[functionName] = { functionName, memoryMb: memory ? Number(memory) : houseMemoryMb };
    propertyOf[property ?? local ?? ''] = functionName;
  }
  for (const match of serviceStackSource.matchAll(
    /(?:this\.)?(\w+)\.addEventSource\(\s*new (SqsEventSource|DynamoEventSource)\(/g,
  )) {
    const [, property, kind] = match;
    const functionName = propertyOf[property as string];
    if (!functionName || !functions[functionName]) continue;
    const block = balanced(serviceStackSource, (match.index ?? 0) + match[0].length - 1);
    const batch = /batchSize:\s*(\d+)/.exec(block)?.[1];
    const queueProperty = /stateful\.(\w+)/.exec(block)?.[1] ?? '';
    const queue = queueDefinitions.find((definition) => lowerFirst(definition.id) === queueProperty);
    functions[functionName] = {
      ...functions[functionName],
      source: kind === 'SqsEventSource' ? 'sqs' : 'dynamodb',
      // Lambda's defaults: 10 for SQS, 100 for DynamoDB streams.
      batchSize: batch ? Number(batch) : kind === 'SqsEventSource' ? 10 : 100,
      ...(kind === 'SqsEventSource'
        ? { fifo: queue?.fifo ?? queueProperty.toLowerCase().includes('fifo') }
        : {}),
    };
  }
  return {
    houseMemoryMb,
    functions,
    hasAuthorizer: /new HouseFunction\(this,\s*'Authorizer'/.test(serviceStackSource),
  };
};
