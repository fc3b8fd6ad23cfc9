export * from './client.ts';
export * from './errors.ts';
export * from './http.ts';
export * from './types.ts';
export * from './issues.ts';
