/**
 * Parameter schemas shared by conditions and actions. Everything a rule file can get wrong is
 * caught here, at validation, with a message and a hint: compile steps later trust their input.
 */
import picomatch from 'picomatch';
import { z } from 'zod';
import { DURATION_HELP, DURATION_PATTERN } from '../../time/index.ts';
import { checkRegex } from './regex.ts';
import { checkTemplate } from './template.ts';

export const regexSchema = z
  .string()
  .superRefine((source, ctx) => {
    const checked = checkRegex(source);
    if (!checked.ok)
      ctx.addIssue({ code: 'custom', message: checked.message, params: { hint: checked.hint } });
  })
  .meta({
    title: 'regex',
    description:
      'a regular expression (JavaScript syntax, run in linear time: no backreferences or lookaround; a leading (?i) ignores case)',
  });

export const globSchema = z
  .string()
  .min(1)
  .superRefine((glob, ctx) => {
    try {
      picomatch(glob);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: `invalid glob "${glob}": ${(error as Error).message}` });
    }
  })
  .meta({ title: 'glob', description: 'a glob: * within a path segment, ** across segments' });

export const durationSchema = z
  .string()
  .regex(DURATION_PATTERN, { message: `invalid duration: write ${DURATION_HELP}` })
  .meta({ title: 'duration', description: DURATION_HELP });

const checkTemplateIssues = (text: string, ctx: z.RefinementCtx): void => {
  for (const problem of checkTemplate(text))
    ctx.addIssue({ code: 'custom', message: problem.message, params: { hint: problem.hint } });
};
const TEMPLATE_HELP = 'text; {{ placeholder }} inserts a field of the item, e.g. {{ author.username }}';

export const templateSchema = z
  .string()
  .superRefine(checkTemplateIssues)
  .meta({ title: 'template', description: TEMPLATE_HELP });
export const nonEmptyTemplateSchema = z
  .string()
  .min(1, { message: 'cannot be empty' })
  .superRefine(checkTemplateIssues)
  .meta({ title: 'template', description: TEMPLATE_HELP });

// The v3 API takes a label set as one comma-separated string (docs/server-behaviour.md#labels): a label with a
// comma in its name could never be written.
export const labelNameSchema = z
  .string()
  .min(1)
  .refine((name) => !name.includes(','), {
    message: 'a label name cannot contain a comma (the v3 API separates labels with commas)',
  })
  .meta({ title: 'label' });

export const labelListSchema = z.array(labelNameSchema).min(1);

export const usernameSchema = z.string().min(1).meta({ title: 'username' });

export const projectPathSchema = z
  .string()
  .regex(/^[\w.-]+\/[\w.-]+$/, { message: 'expected a project path such as "support/helpdesk"' })
  .meta({ title: 'project path' });
