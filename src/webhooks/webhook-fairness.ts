/** An endpoint with due deliveries, as the claim's first read finds it (oldest due first). */
export interface DueEndpoint {
  endpointId: number;
  customerId: number;
  /** Its deliveries due now. */
  due: number;
  /** Its breaker has opened and the pause is over: one try (the probe) at a time decides. */
  probing: boolean;
}

/** What this node holds now (claimed, queued or being sent), per endpoint and per customer. */
export interface Held {
  endpoint: Map<number, number>;
  customer: Map<number, number>;
}

export interface ClaimLimits {
  /** Rows the claim may take in all. */
  room: number;
  /** Most rows one endpoint may hold on the node (those held included). */
  perEndpoint: number;
  /** Most rows the endpoints of one customer may hold on the node (those held included). */
  perCustomer: number;
}

const count = (m: Map<number, number>, key: number) => m.get(key) ?? 0;

/** What one endpoint may still take: its cap (1 while probing) less what the node holds of it. */
export function endpointLeft(e: Pick<DueEndpoint, 'endpointId' | 'probing'>, held: Held, limits: ClaimLimits): number {
  return (e.probing ? 1 : limits.perEndpoint) - count(held.endpoint, e.endpointId);
}

/**
 * How many due deliveries to claim of each endpoint: round-robin over the customers (in the order of
 * their oldest due delivery), one row per turn from each customer's next endpoint (round-robin over its
 * endpoints too), so that no customer and no endpoint with a backlog takes the rows another one is due.
 * Each endpoint takes at most what it has due and `perEndpoint` held in all (1 while probing), each
 * customer `perCustomer`, the claim `room`. Answers endpoint id → rows, in the order of `due`.
 */
export function planClaim(due: DueEndpoint[], held: Held, limits: ClaimLimits): Map<number, number> {
  const plan = new Map<number, number>();
  const customers = new Map<number, { left: number; endpoints: DueEndpoint[]; next: number }>();
  for (const e of due) {
    let c = customers.get(e.customerId);
    if (!c) {
      c = { left: limits.perCustomer - count(held.customer, e.customerId), endpoints: [], next: 0 };
      customers.set(e.customerId, c);
    }
    c.endpoints.push(e);
  }
  for (const e of due) plan.set(e.endpointId, 0);
  let room = limits.room;
  const takes = (e: DueEndpoint) => {
    const taken = plan.get(e.endpointId) as number;
    return taken < e.due && taken < endpointLeft(e, held, limits);
  };
  let turning = [...customers.values()].filter((c) => c.left > 0);
  while (room > 0 && turning.length) {
    for (const c of turning) {
      if (room <= 0) break;
      // The customer's next endpoint that can take a row, from where the last turn left off.
      let taken = false;
      for (let i = 0; i < c.endpoints.length && !taken; i += 1) {
        const e = c.endpoints[(c.next + i) % c.endpoints.length];
        if (!takes(e)) continue;
        plan.set(e.endpointId, (plan.get(e.endpointId) as number) + 1);
        c.next = (c.next + i + 1) % c.endpoints.length;
        c.left -= 1;
        room -= 1;
        taken = true;
      }
      if (!taken) c.left = 0;
    }
    turning = turning.filter((c) => c.left > 0);
  }
  for (const [id, n] of plan) if (!n) plan.delete(id);
  return plan;
}
