import * as z from 'zod';
import type { JsonValue } from '../../domain/a2a.ts';
import { defineTool } from './define-tool.ts';

/** Deterministic arithmetic: the tool tests and demos use, with no outside effect. */
export const calculatorTool = defineTool({
  name: 'calculator',
  description: 'Computes a + b, a - b, a * b or a / b exactly as IEEE-754 doubles.',
  readOnly: true,
  input: z
    .object({
      operation: z.enum(['add', 'subtract', 'multiply', 'divide']).describe('The operation to apply.'),
      a: z.number().describe('The left operand.'),
      b: z.number().describe('The right operand.'),
    })
    .strict(),
  run: ({ operation, a, b }): JsonValue => {
    switch (operation) {
      case 'add':
        return { result: a + b };
      case 'subtract':
        return { result: a - b };
      case 'multiply':
        return { result: a * b };
      case 'divide':
        return b === 0 ? { error: 'division by zero' } : { result: a / b };
    }
  },
});
