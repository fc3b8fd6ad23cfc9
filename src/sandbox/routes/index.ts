/** Every resource family's routes, one file each, mounted under `/api/v3`. */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';

export type RegisterRoutes = (router: Router, ctx: SandboxContext) => void;

export const routeFamilies: RegisterRoutes[] = [];
