/** The command lines typed into the terminal, quoted for each shell family. */
import * as assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  commandLine,
  quoteArgument,
  runFileArguments,
  runTestsArguments,
  shellKind,
} from "../../src/commandLine";

describe("arguments", () => {
  it("runs a file", () => {
    assert.deepEqual(runFileArguments("/w/a.nb"), ["run", "/w/a.nb"]);
  });

  it("runs every test of a file", () => {
    assert.deepEqual(runTestsArguments("/w/a.nb"), ["test", "/w/a.nb"]);
  });

  it("runs one test through --filter", () => {
    assert.deepEqual(runTestsArguments("/w/a.nb", "adds up"), ["test", "/w/a.nb", "--filter", "adds up"]);
  });

  it("keeps a test name that starts with - a value", () => {
    assert.deepEqual(runTestsArguments("/w/a.nb", "-1 is odd"), ["test", "/w/a.nb", "--filter=-1 is odd"]);
  });
});

describe("shellKind", () => {
  it("recognises shells by their executable", () => {
    assert.equal(shellKind("/bin/bash", "linux"), "posix");
    assert.equal(shellKind("/usr/bin/zsh", "darwin"), "posix");
    assert.equal(shellKind("/bin/sh", "linux"), "posix");
    assert.equal(shellKind("/opt/homebrew/bin/fish", "darwin"), "fish");
    assert.equal(shellKind("C:\\Program Files\\PowerShell\\7\\pwsh.exe", "win32"), "powershell");
    assert.equal(shellKind("C:\\WINDOWS\\System32\\WindowsPowerShell\\v1.0\\powershell.exe", "win32"), "powershell");
    assert.equal(shellKind("C:\\WINDOWS\\System32\\cmd.exe", "win32"), "cmd");
    assert.equal(shellKind("C:\\Program Files\\Git\\bin\\bash.exe", "win32"), "posix");
  });

  it("falls back to the platform's default shell family", () => {
    assert.equal(shellKind(undefined, "linux"), "posix");
    assert.equal(shellKind("", "darwin"), "posix");
    assert.equal(shellKind("/usr/bin/unknown-shell", "linux"), "posix");
    assert.equal(shellKind(undefined, "win32"), "powershell");
  });
});

describe("quoteArgument", () => {
  it("leaves plain words alone", () => {
    for (const shell of ["posix", "fish", "powershell", "cmd"] as const) {
      assert.equal(quoteArgument("run", shell), "run");
      assert.equal(quoteArgument("--filter", shell), "--filter");
    }
    assert.equal(quoteArgument("/home/ada/project/main.nb", "posix"), "/home/ada/project/main.nb");
    assert.equal(quoteArgument("C:\\work\\main.nb", "cmd"), "C:\\work\\main.nb");
    assert.equal(quoteArgument("C:\\work\\main.nb", "powershell"), "C:\\work\\main.nb");
  });

  it("quotes paths with spaces", () => {
    assert.equal(quoteArgument("/home/ada/my project/main.nb", "posix"), "'/home/ada/my project/main.nb'");
    assert.equal(quoteArgument("/home/ada/my project/main.nb", "fish"), "'/home/ada/my project/main.nb'");
    assert.equal(quoteArgument("C:\\my files\\main.nb", "powershell"), "'C:\\my files\\main.nb'");
    assert.equal(quoteArgument("C:\\my files\\main.nb", "cmd"), '"C:\\my files\\main.nb"');
  });

  it("quotes the empty string", () => {
    assert.equal(quoteArgument("", "posix"), "''");
    assert.equal(quoteArgument("", "fish"), "''");
    assert.equal(quoteArgument("", "powershell"), "''");
    assert.equal(quoteArgument("", "cmd"), '""');
  });

  it("escapes quotes inside quoted words", () => {
    assert.equal(quoteArgument("it's", "posix"), "'it'\\''s'");
    assert.equal(quoteArgument("it's", "fish"), "'it\\'s'");
    assert.equal(quoteArgument("it's", "powershell"), "'it''s'");
    assert.equal(quoteArgument("it\u2019s", "powershell"), "'it\u2019\u2019s'");
    assert.equal(quoteArgument('say "hi"', "cmd"), '"say \\"hi\\""');
  });

  it("quotes PowerShell words that start with - and contain . or :", () => {
    assert.equal(quoteArgument("--filter=-1.5", "powershell"), "'--filter=-1.5'");
    assert.equal(quoteArgument("-a.b", "powershell"), "'-a.b'");
  });

  it("neutralises shell syntax", () => {
    assert.equal(quoteArgument("$HOME `x` $(y) * ; & |", "posix"), "'$HOME `x` $(y) * ; & |'");
    assert.equal(quoteArgument("$HOME; rm", "powershell"), "'$HOME; rm'");
    assert.equal(quoteArgument("a&b|c", "cmd"), '"a&b|c"');
  });

  it("keeps backslashes literal in fish and doubles them before quotes for Windows programs", () => {
    assert.equal(quoteArgument("a\\b c", "posix"), "'a\\b c'");
    assert.equal(quoteArgument("a\\b c", "fish"), "'a\\\\b c'");
    assert.equal(quoteArgument("C:\\dir with space\\", "cmd"), '"C:\\dir with space\\\\"');
    assert.equal(quoteArgument('a\\"b c', "cmd"), '"a\\\\\\"b c"');
  });
});

describe("commandLine", () => {
  it("joins the program and the quoted arguments", () => {
    assert.equal(
      commandLine("/usr/bin/nabla", runFileArguments("/home/ada/my project/main.nb"), "posix"),
      "/usr/bin/nabla run '/home/ada/my project/main.nb'",
    );
  });

  it("quotes a program path with spaces", () => {
    assert.equal(
      commandLine("/home/ada/My Tools/nabla", runTestsArguments("/w/t.nb", "adds up"), "posix"),
      "'/home/ada/My Tools/nabla' test /w/t.nb --filter 'adds up'",
    );
    assert.equal(
      commandLine("C:\\Program Files\\Nabla\\nabla.exe", runFileArguments("C:\\my files\\main.nb"), "cmd"),
      '"C:\\Program Files\\Nabla\\nabla.exe" run "C:\\my files\\main.nb"',
    );
  });

  it("calls a quoted program with & in PowerShell", () => {
    assert.equal(
      commandLine("C:\\Program Files\\Nabla\\nabla.exe", runTestsArguments("C:\\w\\t.nb", "it's"), "powershell"),
      "& 'C:\\Program Files\\Nabla\\nabla.exe' test C:\\w\\t.nb --filter 'it''s'",
    );
    assert.equal(commandLine("nabla", runFileArguments("C:\\w\\a.nb"), "powershell"), "nabla run C:\\w\\a.nb");
  });

  it("quotes for fish", () => {
    assert.equal(
      commandLine("/usr/bin/nabla", runTestsArguments("/w/my tests.nb", "a 'b'"), "fish"),
      "/usr/bin/nabla test '/w/my tests.nb' --filter 'a \\'b\\''",
    );
  });
});
