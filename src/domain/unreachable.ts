/**
 * The end of an exhaustive `switch` over a closed union (a CRM's kind, a sequencer's platform): a case
 * left out fails compilation here, and a value outside the union (stored data, a cast) throws.
 */
export function unreachable(value: never): never {
  throw new Error(`unhandled case: ${String(value)}`);
}
