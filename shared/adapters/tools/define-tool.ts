import type { JsonObject, JsonValue } from '../../domain/a2a.ts';
import { type Tool, type ToolContext, type ToolOutput, toolNamePattern } from '../../domain/tools.ts';
import * as z from '../../zod.ts';

export interface ToolDefinition<Input extends z.core.$ZodType> {
  readonly name: string;
  readonly description: string;
  readonly readOnly: boolean;
  /** Validates the model's arguments; its JSON Schema is what the model is shown. */
  readonly input: Input;
  readonly run: (args: z.infer<Input>, context: ToolContext) => Promise<JsonValue> | JsonValue;
}

/** A tool from a zod schema: one declaration gives the JSON Schema and the argument check. */
export const defineTool = <Input extends z.core.$ZodType>(definition: ToolDefinition<Input>): Tool => {
  if (!toolNamePattern.test(definition.name)) throw new Error(`Invalid tool name ${definition.name}`);
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(definition.input) as JsonObject;
  return {
    name: definition.name,
    description: definition.description,
    readOnly: definition.readOnly,
    // The build's own tools declare read-only or not; a non-read-only one counts as a write (I-EFFECT).
    effect: definition.readOnly ? 'read-only' : 'write',
    destructive: false,
    inputSchema,
    invoke: async (args: JsonObject, context: ToolContext): Promise<ToolOutput> => {
      const parsed = z.safeParse(definition.input, args);
      if (!parsed.success) {
        const problems = parsed.error.issues.map(
          (issue) => `${issue.path.join('.') || '(arguments)'}: ${issue.message}`,
        );
        return { ok: false, error: `Invalid arguments: ${problems.join('; ')}` };
      }
      return { ok: true, content: await definition.run(parsed.data, context) };
    },
  };
};
