/** PLACEHOLDER: the demo seed is being written (issue 3). */
import type { SandboxContext } from './context.ts';

export async function seedDemo(_ctx: SandboxContext): Promise<void> {}
