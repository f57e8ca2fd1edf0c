import { DueEndpoint, Held, planClaim } from './webhook-fairness';

describe('fair webhook claims (planClaim)', () => {
  const none = (): Held => ({ endpoint: new Map(), customer: new Map() });
  const limits = { room: 64, perEndpoint: 8, perCustomer: 16 };
  const ep = (endpointId: number, customerId: number, due: number, probing = false): DueEndpoint => ({ endpointId, customerId, due, probing });
  const sum = (plan: Map<number, number>) => [...plan.values()].reduce((a, b) => a + b, 0);

  it('gives a customer with one late delivery its row although another has hundreds due before it', () => {
    // Customer 1: 20 endpoints, 20 due rows each, all older than customer 2's one row.
    const due = [...Array.from({ length: 20 }, (_, i) => ep(100 + i, 1, 20)), ep(500, 2, 1)];
    const plan = planClaim(due, none(), limits);
    expect(plan.get(500)).toBe(1);
    expect(sum(plan)).toBe(17);
    // Customer 1's share is spread over its endpoints, one each.
    expect([...plan].filter(([id]) => id !== 500).every(([, n]) => n === 1)).toBe(true);
  });

  it('shares the room round-robin over customers when it is short', () => {
    const due = [ep(1, 1, 50), ep(2, 2, 50), ep(3, 3, 50)];
    const plan = planClaim(due, none(), { room: 7, perEndpoint: 100, perCustomer: 100 });
    expect([plan.get(1), plan.get(2), plan.get(3)]).toEqual([3, 2, 2]);
  });

  it('caps an endpoint and a customer, counting what the node already holds', () => {
    const held = none();
    held.endpoint.set(1, 6);
    held.customer.set(1, 6);
    held.customer.set(2, 16);
    const plan = planClaim([ep(1, 1, 50), ep(2, 1, 50), ep(3, 2, 50)], held, limits);
    expect(plan.get(1)).toBe(2); // 8 per endpoint, 6 held
    expect(plan.get(2)).toBe(8); // then the customer's other endpoint, up to its cap (6 + 2 + 8 = 16)
    expect(plan.has(3)).toBe(false); // customer 2 holds all it may
  });

  it('takes no more than an endpoint has due, and one row of a probing endpoint (none while it holds one)', () => {
    expect([...planClaim([ep(1, 1, 3), ep(2, 2, 40, true)], none(), limits)]).toEqual([
      [1, 3],
      [2, 1],
    ]);
    const held = none();
    held.endpoint.set(2, 1);
    expect(planClaim([ep(2, 2, 40, true)], held, limits).size).toBe(0);
  });

  it('never plans more than the room', () => {
    const due = Array.from({ length: 100 }, (_, i) => ep(i + 1, i + 1, 10));
    const plan = planClaim(due, none(), limits);
    expect(sum(plan)).toBe(64);
    expect(plan.size).toBe(64); // one row for each of the 64 oldest customers first
  });
});
