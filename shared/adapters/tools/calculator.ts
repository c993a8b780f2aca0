import type { JsonValue } from '../../domain/a2a.ts';
import * as z from '../../zod.ts';
import { defineTool } from './define-tool.ts';

/** Deterministic arithmetic: the tool tests and demos use, with no outside effect. */
export const calculatorTool = defineTool({
  name: 'calculator',
  description: 'Computes a + b, a - b, a * b or a / b exactly as IEEE-754 doubles.',
  readOnly: true,
  input: z.strictObject({
    operation: z.enum(['add', 'subtract', 'multiply', 'divide']).check(z.describe('The operation to apply.')),
    a: z.number().check(z.describe('The left operand.')),
    b: z.number().check(z.describe('The right operand.')),
  }),
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
