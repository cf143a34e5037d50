/**
 * The SSRF guard of HTTPS targets (docs/SECURITY.md, "Targets"): whoever may set a target's URL
 * could otherwise make the dispatcher POST to what only it can reach — the instance metadata
 * service (169.254.169.254, fd00:ec2::254) and its credentials, a VPC's private hosts, the
 * local server's own port. Addresses that are not public unicast are refused:
 *
 * | kind                  | IPv4                                          | IPv6                          |
 * | --------------------- | --------------------------------------------- | ----------------------------- |
 * | unspecified           | 0.0.0.0/8                                     | ::/128                        |
 * | loopback              | 127.0.0.0/8                                   | ::1/128                       |
 * | private               | 10/8, 172.16/12, 192.168/16, 100.64/10 (CGNAT), 192.0.0/24, 198.18/15 | fc00::/7, fec0::/10, 64:ff9b:1::/48 |
 * | link-local            | 169.254.0.0/16 (instance metadata among them) | fe80::/10                     |
 * | multicast             | 224.0.0.0/4                                   | ff00::/8                      |
 * | reserved              | 240.0.0.0/4, the documentation ranges         | 100::/64, 2001:db8::/32       |
 *
 * An IPv6 address that carries an IPv4 one is judged as that IPv4 address: IPv4-mapped
 * (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64
 * (64:ff9b::/96) and 6to4 (2002::/16) — each reaches that IPv4 host by some route.
 *
 * The check runs in {@link guardedLookup}, the `lookup` of the request's own connection: the
 * addresses checked are the ones connected to, so a name that resolves to a public address
 * when the URL is saved and to a private one at delivery (DNS rebinding) is still refused.
 * Node skips `lookup` for a literal IP host, so the invoker checks those with
 * {@link addressProblem} itself.
 *
 * @example
 * ```ts
 * addressProblem('169.254.169.254', { allowLoopback: false });
 * // '169.254.169.254 is a link-local address (169.254.0.0/16, where the instance metadata service answers)'
 * https.request(url, { lookup: guardedLookup({ allowLoopback: false }) });
 * ```
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, isIPv4, type LookupFunction } from 'node:net';

/** What {@link addressProblem} and {@link guardedLookup} allow beyond public unicast addresses. */
export interface AddressGuardOptions {
  /** Loopback addresses (127/8, ::1) are allowed: the local server's targets run on the same machine. */
  allowLoopback: boolean;
  /**
   * Only loopback addresses are allowed, whatever `allowLoopback` says: a plain-http target of
   * the local server must not leave the machine.
   */
  loopbackOnly?: boolean | undefined;
}

type Kind = 'unspecified' | 'loopback' | 'private' | 'link-local' | 'multicast' | 'reserved';

/** One refused range, with what to say about it. */
interface Rule {
  kind: Kind;
  cidr: string;
  note?: string;
  list: BlockList;
}

const rule = (kind: Kind, cidr: string, note?: string): Rule => {
  const [net = '', bits = ''] = cidr.split('/');
  const list = new BlockList();
  list.addSubnet(net, Number(bits), isIPv4(net) ? 'ipv4' : 'ipv6');
  return note === undefined ? { kind, cidr, list } : { kind, cidr, note, list };
};

const IPV4_RULES: readonly Rule[] = [
  rule('unspecified', '0.0.0.0/8', '"this network"; 0.0.0.0 connects to the host itself'),
  rule('loopback', '127.0.0.0/8'),
  rule('private', '10.0.0.0/8'),
  rule('private', '172.16.0.0/12'),
  rule('private', '192.168.0.0/16'),
  rule('private', '100.64.0.0/10', 'carrier-grade NAT'),
  rule('private', '192.0.0.0/24', 'IETF protocol assignments'),
  rule('private', '198.18.0.0/15', 'benchmarking'),
  rule('link-local', '169.254.0.0/16', 'where the instance metadata service answers'),
  rule('multicast', '224.0.0.0/4'),
  rule('reserved', '240.0.0.0/4', 'and the broadcast address'),
  rule('reserved', '192.0.2.0/24', 'documentation'),
  rule('reserved', '198.51.100.0/24', 'documentation'),
  rule('reserved', '203.0.113.0/24', 'documentation'),
];

const IPV6_RULES: readonly Rule[] = [
  rule('unspecified', '::/128'),
  rule('loopback', '::1/128'),
  rule('private', 'fc00::/7', 'unique local; the instance metadata service answers at fd00:ec2::254'),
  rule('private', 'fec0::/10', 'site-local'),
  rule('private', '64:ff9b:1::/48', 'local-use NAT64'),
  rule('link-local', 'fe80::/10'),
  rule('multicast', 'ff00::/8'),
  rule('reserved', '100::/64', 'discard-only'),
  rule('reserved', '2001:db8::/32', 'documentation'),
];

/**
 * Why the dispatcher must not connect to `ip`, or undefined when it may (a public unicast
 * address; loopback too with `allowLoopback`). Anything that is not an IP address is refused.
 *
 * @example
 * ```ts
 * addressProblem('10.1.2.3', { allowLoopback: false }); // '10.1.2.3 is a private address (10.0.0.0/8)'
 * addressProblem('::ffff:127.0.0.1', { allowLoopback: true }); // undefined
 * addressProblem('93.184.215.14', { allowLoopback: false }); // undefined
 * ```
 */
export function addressProblem(ip: string, opts: AddressGuardOptions): string | undefined {
  // A scope (fe80::1%eth0) names an interface, not part of the address.
  const bare = ip.replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return `${ip} is not an IP address`;
  if (family === 6) {
    const bytes = ipv6Bytes(bare);
    const carried = carriedIPv4(bytes);
    if (carried) {
      const problem = judge(carried.ipv4, IPV4_RULES, 'ipv4', opts);
      return problem && `${ip} (${carried.how} ${carried.ipv4}) is ${problem}`;
    }
  }
  const problem = judge(bare, family === 4 ? IPV4_RULES : IPV6_RULES, family === 4 ? 'ipv4' : 'ipv6', opts);
  return problem && `${ip} is ${problem}`;
}

/** "a <kind> address (<range>)" for the first rule `ip` falls under, or undefined when none refuses it. */
function judge(ip: string, rules: readonly Rule[], family: 'ipv4' | 'ipv6', opts: AddressGuardOptions) {
  const hit = rules.find((r) => r.list.check(ip, family));
  if (opts.loopbackOnly && hit?.kind !== 'loopback')
    return 'not a loopback address (this target may only be reached on loopback)';
  if (!hit || (hit.kind === 'loopback' && (opts.allowLoopback || opts.loopbackOnly))) return undefined;
  const article = hit.kind === 'unspecified' ? 'an' : 'a';
  return `${article} ${hit.kind} address (${hit.cidr}${hit.note ? `, ${hit.note}` : ''})`;
}

/** The 16 bytes of a valid IPv6 address (`isIPv6` already said it is one). */
function ipv6Bytes(ip: string): Uint8Array {
  const bytes = new Uint8Array(16);
  let text = ip;
  // A trailing dotted quad is the last 32 bits.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  const tail: number[] = [];
  if (dotted?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1].split('.').map(Number);
    tail.push((a << 8) | b, (c << 8) | d);
    text = text.slice(0, -dotted[1].length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const [head = '', rest] = text.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const front = groups(head);
  const back = [...(rest === undefined ? [] : groups(rest)), ...tail];
  const words =
    rest === undefined
      ? [...front, ...tail]
      : [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  words.forEach((w, i) => {
    bytes[2 * i] = w >> 8;
    bytes[2 * i + 1] = w & 0xff;
  });
  return bytes;
}

const zero = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
const quad = (b: Uint8Array, at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;

/** The IPv4 address an IPv6 one carries, and how, if it carries one. */
function carriedIPv4(b: Uint8Array): { ipv4: string; how: string } | undefined {
  if (zero(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return { ipv4: quad(b, 12), how: 'IPv4-mapped' };
  if (zero(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zero(b, 10, 12))
    return { ipv4: quad(b, 12), how: 'IPv4-translated' };
  // :: and ::1 are IPv6's own unspecified and loopback addresses, not 0.0.0.0 and 0.0.0.1.
  const ownAddress = zero(b, 12, 15) && (b[15] ?? 0) <= 1;
  if (zero(b, 0, 12) && !ownAddress) return { ipv4: quad(b, 12), how: 'IPv4-compatible' };
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(b, 4, 12))
    return { ipv4: quad(b, 12), how: 'NAT64 for' };
  if (b[0] === 0x20 && b[1] === 0x02) return { ipv4: quad(b, 2), how: '6to4 for' };
  return undefined;
}

/** Thrown (passed to the connection) when the guard refuses a host's address. */
export class AddressRefusedError extends Error {
  readonly code = 'ERR_SLUICE_ADDRESS_REFUSED';
  constructor(
    readonly host: string,
    readonly problem: string,
  ) {
    super(`the address guard refused ${host}: ${problem}`);
    this.name = 'AddressRefusedError';
  }
}

/** Resolves a name to every address it has (dns.lookup with `all: true`; replaceable in tests). */
export type Resolve = (
  host: string,
  opts: { family: 0 | 4 | 6; hints?: number | undefined },
) => Promise<LookupAddress[]>;

const systemResolve: Resolve = (host, { family, hints }) =>
  new Promise((resolve, reject) =>
    dnsLookup(host, { all: true, family, ...(hints === undefined ? {} : { hints }) }, (err, addresses) =>
      err ? reject(err) : resolve(addresses),
    ),
  );

/**
 * A `lookup` for `http.request` / `net.connect` that resolves the host with `dns.lookup` (every
 * address) and fails the connection with an {@link AddressRefusedError} if any of them has a
 * problem: a name with one private address among public ones is refused as a whole, since the
 * connection (or Node's happy-eyeballs family selection) may pick any of them.
 *
 * @example
 * ```ts
 * const req = https.request(url, { method: 'POST', lookup: guardedLookup({ allowLoopback: false }) });
 * req.on('error', (err) => err instanceof AddressRefusedError && console.warn(err.message));
 * ```
 */
export function guardedLookup(opts: AddressGuardOptions & { resolve?: Resolve | undefined }): LookupFunction {
  const resolve = opts.resolve ?? systemResolve;
  return (hostname, options, callback) => {
    const family =
      options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
    resolve(hostname, { family, hints: options.hints }).then(
      (addresses) => {
        if (addresses.length === 0) return callback(new AddressRefusedError(hostname, 'it has no address'), '');
        for (const a of addresses) {
          const problem = addressProblem(a.address, opts);
          if (problem) return callback(new AddressRefusedError(hostname, problem), '');
        }
        if (options.all) return callback(null, addresses);
        const [first] = addresses as [LookupAddress];
        return callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}
