/**
 * Shell completion scripts (`sluice completion bash|zsh|fish`), generated from the program's
 * own command tree, so a new command or flag completes without anyone editing a script. The
 * scripts are static (no Node start per Tab); only context names are asked of the CLI
 * (`sluice context list --names`), since they change at run time.
 *
 * Each script finds the command path the same way: it walks the words before the cursor,
 * skips options (and the value after one that takes a value), and follows subcommand names.
 */
import type { Command, Option } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** How a value (of an option, or a positional argument) completes. */
type Values = { kind: 'words'; words: string[] } | { kind: 'files' } | { kind: 'contexts' } | { kind: 'none' };

interface OptSpec {
  flags: string[];
  description: string;
  takesValue: boolean;
  values: Values;
}

interface NodeSpec {
  /** Subcommand names from the root, joined by spaces ('' for the root). */
  path: string;
  subs: { name: string; description: string }[];
  /** This command's options and every global option. */
  opts: OptSpec[];
  /** What its first positional argument completes to. */
  args: Values;
}

/** Option names whose value is a file path. */
const FILE_OPTIONS = new Set(['--file', '--outputs', '--grants']);

function valuesOfOption(o: Option): Values {
  if (o.argChoices) return { kind: 'words', words: o.argChoices };
  if (o.long === '--context') return { kind: 'contexts' };
  if (o.long && FILE_OPTIONS.has(o.long)) return { kind: 'files' };
  return { kind: 'none' };
}

function optSpec(o: Option): OptSpec {
  return {
    flags: [o.short, o.long].filter((f): f is string => f !== undefined),
    description: o.description,
    takesValue: o.required || o.optional,
    values: valuesOfOption(o),
  };
}

/** The command tree, flattened: one entry per command path. */
export function commandTree(program: Command): NodeSpec[] {
  const help: OptSpec = {
    flags: ['-h', '--help'],
    description: 'show help',
    takesValue: false,
    values: { kind: 'none' },
  };
  // Every command takes the program's options (but `--version`) and `--help`.
  const globals = [...program.options.filter((o) => o.long !== '--version').map(optSpec), help];
  const out: NodeSpec[] = [];
  const visit = (cmd: Command, path: string): void => {
    const first = cmd.registeredArguments[0];
    const contextArg = path === 'context use' || path === 'context remove';
    out.push({
      path,
      subs: cmd.commands.map((c) => ({ name: c.name(), description: c.description() })),
      opts: [
        ...(cmd === program ? program.options.filter((o) => o.long === '--version') : cmd.options).map(optSpec),
        ...globals,
      ],
      args: contextArg
        ? { kind: 'contexts' }
        : first?.argChoices
          ? { kind: 'words', words: first.argChoices }
          : { kind: 'none' },
    });
    for (const c of cmd.commands) visit(c, path ? `${path} ${c.name()}` : c.name());
  };
  visit(program, '');
  return out;
}

/** The completion script for `shell`. */
export function completionScript(program: Command, shell: Shell): string {
  const tree = commandTree(program);
  const name = program.name();
  if (shell === 'bash') return bashScript(name, tree);
  if (shell === 'zsh') return zshScript(name, tree);
  return fishScript(name, tree);
}

// ------------------------------------------------------------------- shared shell pieces

/** A single-quoted shell word (POSIX quoting, which bash, zsh and fish all read). */
const sq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
/** A fish single-quoted word (fish escapes `'` and `\` with a backslash). */
const fq = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** `case` arms mapping each command path to a space-separated word list, for bash and zsh. */
function caseTable(fn: string, tree: NodeSpec[], words: (n: NodeSpec) => string[]): string {
  const arms = tree
    .map((n) => ({ path: n.path, list: words(n) }))
    .filter((a) => a.list.length > 0)
    .map((a) => `    ${sq(a.path)}) REPLY=${sq(` ${a.list.join(' ')} `)} ;;`);
  return [`${fn}() {`, '  case "$1" in', ...arms, "    *) REPLY=' ' ;;", '  esac', '}'].join('\n');
}

const valuedFlags = (n: NodeSpec): string[] => n.opts.filter((o) => o.takesValue).flatMap((o) => o.flags);

/** `case` arms for the values of each (path, option) pair and of each path's first argument. */
function valuesTable(fn: string, tree: NodeSpec[], contexts: string): string {
  const arm = (pattern: string, v: Values): string | undefined => {
    if (v.kind === 'words') return `    ${pattern}) REPLY=${sq(v.words.join(' '))}; KIND=words ;;`;
    if (v.kind === 'files') return `    ${pattern}) KIND=files ;;`;
    if (v.kind === 'contexts') return `    ${pattern}) REPLY="$(${contexts})"; KIND=words ;;`;
    return undefined;
  };
  const arms = new Set<string>();
  for (const n of tree) {
    for (const o of n.opts) for (const f of o.flags) arms.add(arm(sq(`${n.path}|${f}`), o.values) ?? '');
    arms.add(arm(sq(`${n.path}|`), n.args) ?? '');
  }
  arms.delete('');
  return [`${fn}() {`, '  REPLY=; KIND=none', '  case "$1|$2" in', ...arms, '  esac', '}'].join('\n');
}

// -------------------------------------------------------------------------------- bash

function bashScript(name: string, tree: NodeSpec[]): string {
  const contexts = `"\${COMP_WORDS[0]}" context list --names 2>/dev/null`;
  return `# ${name} completion for bash. Load it in this shell with
#   source <(${name} completion bash)
# or for every shell: ${name} completion bash > ~/.local/share/bash-completion/completions/${name}
${caseTable('_sluice_subs', tree, (n) => n.subs.map((s) => s.name))}
${caseTable('_sluice_opts', tree, (n) => n.opts.flatMap((o) => o.flags))}
${caseTable('_sluice_valued', tree, valuedFlags)}
${valuesTable('_sluice_values', tree, contexts)}
_sluice() {
  local cur=\${COMP_WORDS[COMP_CWORD]} path= w i skip=0 REPLY KIND
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=\${COMP_WORDS[i]}
    if ((skip)); then skip=0; continue; fi
    if [[ $w == -* ]]; then
      _sluice_valued "$path"
      [[ $w != *=* && $REPLY == *" $w "* ]] && skip=1
      continue
    fi
    _sluice_subs "$path"
    [[ $REPLY == *" $w "* ]] && path=\${path:+$path }$w
  done
  COMPREPLY=()
  if ((skip)); then
    _sluice_values "$path" "\${COMP_WORDS[COMP_CWORD-1]}"
  elif [[ $cur == -* ]]; then
    _sluice_opts "$path"; KIND=words
  else
    _sluice_subs "$path"; KIND=words
    [[ $REPLY == ' ' ]] && _sluice_values "$path" ''
  fi
  case $KIND in
    words) COMPREPLY=($(compgen -W "$REPLY" -- "$cur")) ;;
    files) COMPREPLY=($(compgen -f -- "$cur")) ;;
  esac
}
complete -F _sluice ${name}
`;
}

// --------------------------------------------------------------------------------- zsh

/** `case` arms mapping each path to `name:description` lines for `_describe`. */
function describedTable(fn: string, tree: NodeSpec[], entries: (n: NodeSpec) => string[]): string {
  const arms = tree
    .map((n) => ({ path: n.path, list: entries(n) }))
    .filter((a) => a.list.length > 0)
    .map((a) => `    ${sq(a.path)}) reply=(${a.list.map(sq).join(' ')}) ;;`);
  return [`${fn}() {`, '  reply=()', '  case "$1" in', ...arms, '  esac', '}'].join('\n');
}

const described = (name: string, description: string): string => `${name.replace(/:/g, '\\:')}:${oneLine(description)}`;

function zshScript(name: string, tree: NodeSpec[]): string {
  const contexts = `\${words[1]} context list --names 2>/dev/null`;
  return `#compdef ${name}
# ${name} completion for zsh. Load it in this shell with
#   source <(${name} completion zsh)
# or for every shell: ${name} completion zsh > "\${fpath[1]}/_${name}" (then restart zsh)
${caseTable('_sluice_subs', tree, (n) => n.subs.map((s) => s.name))}
${caseTable('_sluice_valued', tree, valuedFlags)}
${valuesTable('_sluice_values', tree, contexts)}
${describedTable('_sluice_described_subs', tree, (n) => n.subs.map((s) => described(s.name, s.description)))}
${describedTable('_sluice_described_opts', tree, (n) => n.opts.flatMap((o) => o.flags.map((f) => described(f, o.description))))}
# What completes at the end of \`words\` (the command line up to the cursor): sets KIND
# (subs, opts, words, files, none), REPLY (words) and the path.
_sluice_complete_at() {
  local w i skip=0 cur=\${words[CURRENT]}
  SLUICE_PATH=
  for ((i = 2; i < CURRENT; i++)); do
    w=\${words[i]}
    if ((skip)); then skip=0; continue; fi
    if [[ $w == -* ]]; then
      _sluice_valued "$SLUICE_PATH"
      [[ $w != *=* && $REPLY == *" $w "* ]] && skip=1
      continue
    fi
    _sluice_subs "$SLUICE_PATH"
    [[ $REPLY == *" $w "* ]] && SLUICE_PATH=\${SLUICE_PATH:+$SLUICE_PATH }$w
  done
  if ((skip)); then
    _sluice_values "$SLUICE_PATH" "\${words[CURRENT-1]}"
  elif [[ $cur == -* ]]; then
    KIND=opts
  else
    _sluice_subs "$SLUICE_PATH"
    if [[ $REPLY == ' ' ]]; then _sluice_values "$SLUICE_PATH" ''; else KIND=subs; fi
  fi
}
_sluice() {
  local REPLY KIND SLUICE_PATH
  local -a reply
  _sluice_complete_at
  case $KIND in
    subs) _sluice_described_subs "$SLUICE_PATH"; _describe -t commands 'command' reply ;;
    opts) _sluice_described_opts "$SLUICE_PATH"; _describe -t options 'option' reply ;;
    words) compadd -- \${=REPLY} ;;
    files) _files ;;
  esac
}
if (( $+functions[compdef] )); then compdef _sluice ${name}; fi
`;
}

// -------------------------------------------------------------------------------- fish

function fishScript(name: string, tree: NodeSpec[]): string {
  const lines: string[] = [
    `# ${name} completion for fish. Load it in this shell with`,
    `#   ${name} completion fish | source`,
    `# or for every shell: ${name} completion fish > ~/.config/fish/completions/${name}.fish`,
    'function __sluice_subs',
    '    switch "$argv[1]"',
    ...tree
      .filter((n) => n.subs.length > 0)
      .flatMap((n) => [
        `        case ${fq(n.path)}`,
        `            printf '%s\\n' ${n.subs.map((s) => fq(s.name)).join(' ')}`,
      ]),
    '    end',
    'end',
    'function __sluice_valued',
    '    switch "$argv[1]"',
    ...tree
      .filter((n) => valuedFlags(n).length > 0)
      .flatMap((n) => [`        case ${fq(n.path)}`, `            printf '%s\\n' ${valuedFlags(n).map(fq).join(' ')}`]),
    '    end',
    'end',
    '# The command path of the words before the cursor (subcommands only).',
    'function __sluice_path',
    '    set -l path',
    '    set -l skip 0',
    '    for w in (commandline -opc)[2..-1]',
    '        if test $skip = 1',
    '            set skip 0',
    '            continue',
    '        end',
    "        if string match -q -- '-*' $w",
    '            if not string match -q -- \'*=*\' $w; and contains -- $w (__sluice_valued "$path")',
    '                set skip 1',
    '            end',
    '            continue',
    '        end',
    '        if contains -- $w (__sluice_subs "$path")',
    '            set path $path $w',
    '        end',
    '    end',
    '    echo "$path"',
    'end',
    'function __sluice_at',
    '    set -l p (__sluice_path)',
    '    test "$p" = "$argv[1]"',
    'end',
    `complete -c ${name} -f`,
  ];
  const contexts = `(${name} context list --names 2>/dev/null)`;
  const valueArgs = (v: Values): string => {
    if (v.kind === 'words') return ` -x -a ${fq(v.words.join(' '))}`;
    if (v.kind === 'contexts') return ` -x -a ${fq(contexts)}`;
    if (v.kind === 'files') return ' -r -F';
    return ' -r';
  };
  const root = tree.find((n) => n.path === '');
  const globalFlags = new Set((root?.opts ?? []).flatMap((o) => o.flags));
  for (const o of root?.opts ?? [])
    lines.push(
      `complete -c ${name}${fishFlags(o)}${o.takesValue ? valueArgs(o.values) : ''} -d ${fq(oneLine(o.description))}`,
    );
  for (const n of tree) {
    const at = ` -n ${fq(`__sluice_at ${fq(n.path)}`)}`;
    for (const s of n.subs) lines.push(`complete -c ${name}${at} -a ${fq(s.name)} -d ${fq(oneLine(s.description))}`);
    if (n.subs.length === 0 && n.args.kind !== 'none')
      lines.push(`complete -c ${name}${at}${valueArgs(n.args).replace(/ -[xr]( |$)/, ' ')}`);
    for (const o of n.opts) {
      if (o.flags.some((f) => globalFlags.has(f))) continue;
      lines.push(
        `complete -c ${name}${at}${fishFlags(o)}${o.takesValue ? valueArgs(o.values) : ''} -d ${fq(oneLine(o.description))}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

function fishFlags(o: OptSpec): string {
  return o.flags.map((f) => (f.startsWith('--') ? ` -l ${f.slice(2)}` : ` -s ${f.slice(1)}`)).join('');
}
