// The SSRF guard of HTTPS targets (server/service/targets/address-guard.ts): which addresses the
// dispatcher may connect to, and the lookup that checks every address a name resolves to.
import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  AddressRefusedError,
  addressProblem,
  guardedLookup,
  type AddressGuardOptions,
  type Resolve,
} from '../../server/service/targets/address-guard.js';

const strict = { allowLoopback: false };
const local = { allowLoopback: true };

/** [address, what the refusal says (a fragment), or undefined when it is allowed] */
const TABLE: [string, string | undefined][] = [
  // public IPv4 and IPv6
  ['93.184.215.14', undefined],
  ['8.8.8.8', undefined],
  ['1.1.1.1', undefined],
  ['172.15.255.255', undefined], // just below 172.16/12
  ['172.32.0.0', undefined], // just above it
  ['100.63.255.255', undefined], // just below 100.64/10
  ['100.128.0.0', undefined], // just above it
  ['169.253.255.255', undefined],
  ['223.255.255.255', undefined],
  ['2606:4700:4700::1111', undefined],
  ['2a00:1450:4001:80b::200e', undefined],
  ['::ffff:8.8.8.8', undefined], // mapped, judged as 8.8.8.8
  ['64:ff9b::808:808', undefined], // NAT64 for 8.8.8.8
  ['2002:808:808::1', undefined], // 6to4 for 8.8.8.8
  // unspecified
  ['0.0.0.0', 'unspecified address (0.0.0.0/8'],
  ['0.1.2.3', 'unspecified address (0.0.0.0/8'],
  ['::', 'unspecified address (::/128)'],
  // loopback
  ['127.0.0.1', 'loopback address (127.0.0.0/8)'],
  ['127.255.255.254', 'loopback address (127.0.0.0/8)'],
  ['::1', 'loopback address (::1/128)'],
  ['0:0:0:0:0:0:0:1', 'loopback address (::1/128)'],
  // private
  ['10.0.0.1', 'private address (10.0.0.0/8)'],
  ['10.255.255.255', 'private address (10.0.0.0/8)'],
  ['172.16.0.1', 'private address (172.16.0.0/12)'],
  ['172.31.255.255', 'private address (172.16.0.0/12)'],
  ['192.168.1.1', 'private address (192.168.0.0/16)'],
  ['100.64.0.1', 'private address (100.64.0.0/10, carrier-grade NAT)'],
  ['100.127.255.255', 'private address (100.64.0.0/10'],
  ['198.18.0.1', 'private address (198.18.0.0/15'],
  ['fc00::1', 'private address (fc00::/7'],
  ['fd12:3456:789a::1', 'private address (fc00::/7'],
  ['fd00:ec2::254', 'private address (fc00::/7'], // the instance metadata service over IPv6
  ['fec0::1', 'private address (fec0::/10'],
  // link-local, the instance metadata address among them
  ['169.254.169.254', 'link-local address (169.254.0.0/16, where the instance metadata service answers)'],
  ['169.254.170.2', 'link-local address (169.254.0.0/16'], // the ECS task metadata endpoint
  ['fe80::1', 'link-local address (fe80::/10)'],
  ['fe80::1%eth0', 'link-local address (fe80::/10)'],
  ['febf:ffff::1', 'link-local address (fe80::/10)'],
  // multicast and reserved
  ['224.0.0.1', 'multicast address (224.0.0.0/4)'],
  ['239.255.255.250', 'multicast address (224.0.0.0/4)'],
  ['240.0.0.1', 'reserved address (240.0.0.0/4'],
  ['255.255.255.255', 'reserved address (240.0.0.0/4'],
  ['192.0.2.1', 'reserved address (192.0.2.0/24, documentation)'],
  ['ff02::1', 'multicast address (ff00::/8)'],
  ['2001:db8::1', 'reserved address (2001:db8::/32'],
  ['100::1', 'reserved address (100::/64'],
  // IPv6 carrying an IPv4 address, judged as that address
  ['::ffff:127.0.0.1', '(IPv4-mapped 127.0.0.1) is a loopback address (127.0.0.0/8)'],
  ['::ffff:7f00:1', '(IPv4-mapped 127.0.0.1) is a loopback address'],
  ['::ffff:169.254.169.254', '(IPv4-mapped 169.254.169.254) is a link-local address'],
  ['::ffff:a9fe:a9fe', '(IPv4-mapped 169.254.169.254) is a link-local address'],
  ['0:0:0:0:0:ffff:10.0.0.1', '(IPv4-mapped 10.0.0.1) is a private address'],
  ['::ffff:0:10.0.0.1', '(IPv4-translated 10.0.0.1) is a private address'],
  ['::10.0.0.1', '(IPv4-compatible 10.0.0.1) is a private address'],
  ['::127.0.0.1', '(IPv4-compatible 127.0.0.1) is a loopback address'],
  ['64:ff9b::a9fe:a9fe', '(NAT64 for 169.254.169.254) is a link-local address'],
  ['64:ff9b::192.168.0.1', '(NAT64 for 192.168.0.1) is a private address'],
  ['64:ff9b:1::1', 'private address (64:ff9b:1::/48'],
  ['2002:a00:1::', '(6to4 for 10.0.0.1) is a private address'],
  // not addresses at all
  ['localhost', 'not an IP address'],
  ['', 'not an IP address'],
  ['1.2.3', 'not an IP address'],
  ['::ffff:999.0.0.1', 'not an IP address'],
];

const ALLOWED = TABLE.filter(([, problem]) => problem === undefined).map(([ip]) => ip);
const REFUSED = TABLE.filter((row): row is [string, string] => row[1] !== undefined);
/** Each address with whether the guard's answer contains its expected refusal (undefined: allowed). */
const judged = (rows: [string, string][], opts: AddressGuardOptions) =>
  rows.map(([ip, problem]) => [ip, addressProblem(ip, opts)?.includes(problem)]);

describe('unit: addressProblem', () => {
  it.each(ALLOWED)('%s is allowed', (ip) => {
    expect(addressProblem(ip, strict)).toBeUndefined();
  });

  it.each(REFUSED)('%s is refused: %s', (ip, problem) => {
    const said = addressProblem(ip, strict);
    expect(said).toContain(problem);
    expect(said?.startsWith(ip)).toBe(true); // the refusal names the address
  });

  it('allowLoopback allows loopback (mapped too), and nothing else the guard refuses', () => {
    const loopback = ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::127.0.0.1'];
    expect(loopback.map((ip) => [ip, addressProblem(ip, local)])).toEqual(loopback.map((ip) => [ip, undefined]));
    // 0.0.0.0 reaches the host itself on Linux, yet it is not loopback: still refused.
    const others = REFUSED.filter(([, problem]) => !problem.includes('loopback'));
    expect(others.length).toBeGreaterThan(40);
    expect(judged(others, local)).toEqual(others.map(([ip]) => [ip, true]));
    expect(ALLOWED.map((ip) => [ip, addressProblem(ip, local)])).toEqual(ALLOWED.map((ip) => [ip, undefined]));
  });

  it('loopbackOnly allows loopback and refuses public addresses too', () => {
    const only: AddressGuardOptions = { allowLoopback: false, loopbackOnly: true };
    expect(addressProblem('127.0.0.1', only)).toBeUndefined();
    expect(addressProblem('::1', only)).toBeUndefined();
    expect(addressProblem('::ffff:127.0.0.1', only)).toBeUndefined();
    expect(addressProblem('8.8.8.8', only)).toContain('not a loopback address');
    expect(addressProblem('2606:4700:4700::1111', only)).toContain('not a loopback address');
    expect(addressProblem('10.0.0.1', only)).toContain('not a loopback address');
  });
});

/** A resolver answering from a table, recording what it was asked. */
function fakeResolve(answers: Record<string, string[]>) {
  const asked: { host: string; family: number }[] = [];
  const resolve: Resolve = async (host, { family }) => {
    asked.push({ host, family });
    const list = answers[host];
    if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return list.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, asked };
}

/** Calls a lookup as net.connect does, with `all` or without. */
function lookupOnce(lookup: ReturnType<typeof guardedLookup>, host: string, all: boolean, family = 0) {
  return new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>(
    (resolve) => lookup(host, { all, family }, (err, address, fam) => resolve({ err, address, family: fam })),
  );
}

describe('unit: guardedLookup', () => {
  const dns = fakeResolve({
    'public.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    'mixed.example': ['93.184.215.14', '10.0.0.7'],
    'metadata.example': ['169.254.169.254'],
    'mapped.example': ['::ffff:169.254.169.254'],
    localhost: ['127.0.0.1', '::1'],
    'empty.example': [],
  });

  it('answers every address when asked for all (as happy eyeballs asks), else the first with its family', async () => {
    const lookup = guardedLookup({ ...strict, resolve: dns.resolve });
    const all = await lookupOnce(lookup, 'public.example', true);
    expect(all.err).toBeNull();
    expect(all.address).toEqual([
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ]);
    const one = await lookupOnce(lookup, 'public.example', false);
    expect(one).toEqual({ err: null, address: '93.184.215.14', family: 4 });
  });

  it('passes the family asked for to the resolver', async () => {
    const lookup = guardedLookup({ ...strict, resolve: dns.resolve });
    dns.asked.length = 0;
    await lookupOnce(lookup, 'public.example', false, 6);
    expect(dns.asked).toEqual([{ host: 'public.example', family: 6 }]);
  });

  it('refuses the whole name when any one address has a problem', async () => {
    const lookup = guardedLookup({ ...strict, resolve: dns.resolve });
    const r = await lookupOnce(lookup, 'mixed.example', true);
    expect(r.err).toBeInstanceOf(AddressRefusedError);
    expect(r.err?.message).toBe('the address guard refused mixed.example: 10.0.0.7 is a private address (10.0.0.0/8)');
    expect((r.err as AddressRefusedError).code).toBe('ERR_SLUICE_ADDRESS_REFUSED');
  });

  it('refuses a name for the metadata address, plainly or IPv4-mapped', async () => {
    const lookup = guardedLookup({ ...strict, resolve: dns.resolve });
    expect((await lookupOnce(lookup, 'metadata.example', false)).err?.message).toContain('instance metadata service');
    expect((await lookupOnce(lookup, 'mapped.example', true)).err?.message).toContain(
      '(IPv4-mapped 169.254.169.254) is a link-local address',
    );
  });

  it('localhost is refused, but with allowLoopback; a name with no address is refused; DNS errors pass through', async () => {
    const strictLookup = guardedLookup({ ...strict, resolve: dns.resolve });
    expect((await lookupOnce(strictLookup, 'localhost', true)).err?.message).toContain('loopback address');
    const localLookup = guardedLookup({ ...local, resolve: dns.resolve });
    expect((await lookupOnce(localLookup, 'localhost', true)).err).toBeNull();
    expect((await lookupOnce(localLookup, 'empty.example', true)).err).toBeInstanceOf(AddressRefusedError);
    const missing = await lookupOnce(localLookup, 'nowhere.example', true);
    expect(missing.err?.code).toBe('ENOTFOUND');
  });

  it('resolves afresh at every connect: a name rebound to a private address is refused then', async () => {
    const answers: Record<string, string[]> = { 'rebind.example': ['93.184.215.14'] };
    const lookup = guardedLookup({ ...strict, resolve: fakeResolve(answers).resolve });
    expect((await lookupOnce(lookup, 'rebind.example', true)).err).toBeNull();
    answers['rebind.example'] = ['127.0.0.1'];
    expect((await lookupOnce(lookup, 'rebind.example', true)).err).toBeInstanceOf(AddressRefusedError);
  });
});
