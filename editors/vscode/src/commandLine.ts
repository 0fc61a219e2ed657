/**
 * The command lines that "Nabla: Run File", "Nabla: Run Tests" and the "Run test" code lens type
 * into a terminal, quoted for the shell that terminal runs.
 *
 * Pure: no `vscode` import, so the quoting is tested on Node alone.
 */

/** Shell families that quote differently. */
export type ShellKind = "posix" | "fish" | "powershell" | "cmd";

const POSIX_SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "yash", "busybox"]);

/**
 * The family of the shell at `shellPath` (VS Code's `env.shell`, the default terminal shell).
 * Unknown shells are taken to be POSIX-like, or PowerShell on Windows, where it is the default.
 */
export function shellKind(shellPath: string | undefined, platform: NodeJS.Platform): ShellKind {
  const base = (shellPath ?? "").split(/[\\/]/).pop() ?? "";
  const name = base.toLowerCase().replace(/\.exe$/, "");
  if (name === "pwsh" || name === "powershell" || name === "pwsh-preview") {
    return "powershell";
  }
  if (name === "cmd") {
    return "cmd";
  }
  if (name === "fish") {
    return "fish";
  }
  if (POSIX_SHELLS.has(name)) {
    return "posix";
  }
  return platform === "win32" ? "powershell" : "posix";
}

/** Words that a POSIX shell reads literally without quotes. */
const POSIX_PLAIN = /^[A-Za-z0-9_./:+,=@%-]+$/;
/** fish: the same, less `%` (process expansion in older versions) and friends. */
const FISH_PLAIN = /^[A-Za-z0-9_./:+-]+$/;
/** PowerShell: `\` is an ordinary character; `@`, `,`, `=` and `%` are not always. */
const POWERSHELL_PLAIN = /^[A-Za-z0-9_./\\:+-]+$/;
/** cmd.exe: `\` is ordinary too. */
const CMD_PLAIN = /^[A-Za-z0-9_./\\:+-]+$/;

/** `arg` as one word for `shell`. */
export function quoteArgument(arg: string, shell: ShellKind): string {
  switch (shell) {
    case "posix":
      if (POSIX_PLAIN.test(arg)) {
        return arg;
      }
      // Inside single quotes nothing is special; a quote ends the string, is escaped, and reopens it.
      return `'${arg.replace(/'/g, `'\\''`)}'`;
    case "fish":
      if (FISH_PLAIN.test(arg)) {
        return arg;
      }
      // fish treats `\\` and `\'` as escapes even inside single quotes.
      return `'${arg.replace(/[\\']/g, (c) => `\\${c}`)}'`;
    case "powershell":
      // Windows PowerShell splits a bare `-a.b` or `-a:b` into two arguments; plain options are fine.
      if (POWERSHELL_PLAIN.test(arg) && (!arg.startsWith("-") || /^-[A-Za-z0-9-]*$/.test(arg))) {
        return arg;
      }
      // In a verbatim string only the quote itself is special (including its typographic forms),
      // and it is escaped by doubling.
      return `'${arg.replace(/['\u2018\u2019\u201a\u201b]/g, (c) => c + c)}'`;
    case "cmd":
      if (CMD_PLAIN.test(arg)) {
        return arg;
      }
      return quoteForWindowsArgv(arg);
  }
}

/**
 * Double quotes as the Microsoft C runtime (and Rust's standard library) split a command line:
 * backslashes are literal except before a quote, where they must be doubled, and a quote is `\"`.
 * cmd.exe itself still expands `%NAME%` inside quotes; there is no reliable way to prevent that
 * in an interactive cmd.exe, and test names or paths with `%...%` in them are rare.
 */
function quoteForWindowsArgv(arg: string): string {
  let quoted = '"';
  let backslashes = 0;
  for (const c of arg) {
    if (c === "\\") {
      backslashes += 1;
      continue;
    }
    if (c === '"') {
      quoted += "\\".repeat(backslashes * 2 + 1) + '"';
    } else {
      quoted += "\\".repeat(backslashes) + c;
    }
    backslashes = 0;
  }
  return `${quoted}${"\\".repeat(backslashes * 2)}"`;
}

/** `program args...` as one line for `shell`. */
export function commandLine(program: string, args: readonly string[], shell: ShellKind): string {
  let head = quoteArgument(program, shell);
  // PowerShell reads a quoted first word as a string expression; `&` makes it a command.
  if (shell === "powershell" && head !== program) {
    head = `& ${head}`;
  }
  return [head, ...args.map((arg) => quoteArgument(arg, shell))].join(" ");
}

/** `nabla run <file>`. */
export function runFileArguments(file: string): string[] {
  return ["run", file];
}

/** `nabla test <file>`, and `--filter <name>` for one test. */
export function runTestsArguments(file: string, testName?: string): string[] {
  if (testName === undefined) {
    return ["test", file];
  }
  // A name that starts with `-` would be read as an option; the `=` form keeps it a value.
  return testName.startsWith("-") ? ["test", file, `--filter=${testName}`] : ["test", file, "--filter", testName];
}
