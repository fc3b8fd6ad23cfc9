/**
 * The end of an exhaustive `switch`: `default: return unhandled(x, 'call kind')`. A case left out
 * does not compile, and the error names it (`Argument of type '"issues.lock"' is not assignable to
 * parameter of type 'never'`) where a switch without it said only `TS2366: Function lacks ending
 * return statement`; at run time (a value from outside the types) it throws with the value.
 */
export function unhandled(value: never, what: string): never {
  throw new Error(`unhandled ${what}: ${JSON.stringify(value)}`);
}
