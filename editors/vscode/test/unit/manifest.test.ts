/**
 * The declarative parts of the extension, checked against the code that relies on them:
 * `package.json` contributions, settings, launch options, snippets and the language configuration.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { COMMANDS } from "../../src/commands";
import { initializationOptions, serverArguments } from "../../src/launch";
import { DEFAULT_SETTINGS, RESTART_SETTINGS, SETTING_KEYS, SETTINGS_SECTION, readSettings } from "../../src/settings";
import { userSettingReachesRemoteWindow } from "./configurationScopes";

const root = path.resolve(__dirname, "../../..");

function readJson<T>(relative: string): T {
  return JSON.parse(fs.readFileSync(path.join(root, relative), "utf8")) as T;
}

interface Manifest {
  main: string;
  engines: { vscode: string };
  repository: { type: string; url: string };
  license: string;
  activationEvents: string[];
  devDependencies: Record<string, string>;
  capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
  contributes: {
    languages: { id: string; extensions: string[]; configuration: string }[];
    grammars: { language: string; scopeName: string; path: string }[];
    snippets: { language: string; path: string }[];
    commands: { command: string; title: string; category: string }[];
    menus: Record<string, { command: string; when?: string }[]>;
    keybindings: { command: string; key: string; when: string }[];
    configuration: { properties: Record<string, { default: unknown; type: string; enum?: string[]; scope?: string }> };
  };
}

const manifest = readJson<Manifest>("package.json");
const properties = manifest.contributes.configuration.properties;

describe("package.json", () => {
  it("contributes the nabla language for .nb files with its grammar and configuration", () => {
    const [language] = manifest.contributes.languages;
    assert.equal(language.id, "nabla");
    assert.deepEqual(language.extensions, [".nb"]);
    const [grammar] = manifest.contributes.grammars;
    assert.deepEqual([grammar.language, grammar.scopeName], ["nabla", "source.nabla"]);
    const [snippets] = manifest.contributes.snippets;
    assert.equal(snippets.language, "nabla");
    for (const file of [language.configuration, grammar.path, snippets.path]) {
      assert.ok(fs.existsSync(path.join(root, file)), `${file} exists`);
    }
    assert.equal(readJson<{ scopeName: string }>(grammar.path).scopeName, grammar.scopeName);
  });

  it("declares exactly the commands the extension registers", () => {
    const declared = manifest.contributes.commands.map((c) => c.command).sort();
    assert.deepEqual(declared, Object.values(COMMANDS).sort());
    for (const command of manifest.contributes.commands) {
      assert.equal(command.category, "Nabla", `${command.command} shows as "Nabla: ..."`);
    }
    const titles = Object.fromEntries(manifest.contributes.commands.map((c) => [c.command, c.title]));
    assert.equal(titles[COMMANDS.runFile], "Run File");
    assert.equal(titles[COMMANDS.runTests], "Run Tests");
    assert.equal(titles[COMMANDS.startRepl], "Start REPL");
    assert.equal(titles[COMMANDS.sendToRepl], "Send Selection to REPL");
    assert.equal(titles[COMMANDS.showGraph], "Show Computational Graph");
    assert.equal(titles[COMMANDS.showPicture], "Show Picture");
  });

  it("offers Show Computational Graph beside Run File, and both picture commands in Nabla editors", () => {
    for (const menu of ["editor/title/run", "explorer/context"]) {
      const entry = manifest.contributes.menus[menu].find((m) => m.command === COMMANDS.showGraph);
      assert.equal(entry?.when, "resourceLangId == nabla", `${menu} has Show Computational Graph`);
    }
    for (const command of [COMMANDS.showGraph, COMMANDS.showPicture]) {
      const palette = manifest.contributes.menus.commandPalette.find((m) => m.command === command);
      assert.equal(palette?.when, "editorLangId == nabla", `${command} is in the palette of Nabla editors`);
    }
  });

  it("binds Shift+Enter in Nabla editors to Send Selection to REPL", () => {
    const bindings = manifest.contributes.keybindings.filter((k) => k.command === COMMANDS.sendToRepl);
    assert.equal(bindings.length, 1);
    assert.equal(bindings[0].key, "shift+enter");
    assert.match(bindings[0].when, /editorTextFocus/);
    assert.match(bindings[0].when, /editorLangId == nabla/);
    const context = manifest.contributes.menus["editor/context"].find((m) => m.command === COMMANDS.sendToRepl);
    assert.equal(context?.when, "editorLangId == nabla");
  });

  it("hides the code lens's Run Test command from the palette, which cannot supply its arguments", () => {
    const hidden = manifest.contributes.menus.commandPalette.find((m) => m.command === COMMANDS.runTest);
    assert.equal(hidden?.when, "false");
  });

  it("declares exactly the settings the extension reads, with the same defaults", () => {
    const keys = Object.values(SETTING_KEYS).map((key) => `${SETTINGS_SECTION}.${key}`).sort();
    assert.deepEqual(Object.keys(properties).sort(), keys);
    assert.equal(properties["nabla.server.path"].default, DEFAULT_SETTINGS.serverPath);
    assert.deepEqual(properties["nabla.server.extraArgs"].default, DEFAULT_SETTINGS.serverExtraArgs);
    assert.equal(properties["nabla.codeLens.enable"].default, DEFAULT_SETTINGS.codeLensEnable);
    assert.deepEqual(properties["nabla.trace.server"].enum, ["off", "messages", "verbose"]);
    for (const key of RESTART_SETTINGS) {
      assert.ok(key in properties, `${key} is declared`);
    }
  });

  it("never takes the server binary or its arguments from an untrusted workspace", () => {
    const { restrictedConfigurations } = manifest.capabilities.untrustedWorkspaces;
    assert.deepEqual(restrictedConfigurations.sort(), ["nabla.server.extraArgs", "nabla.server.path"]);
  });

  // code-server is a remote window: a `machine-overridable` nabla.server.path in the User settings
  // never reached the extension there, which then reported that `nabla` was not on PATH.
  it("takes every setting from the User settings in a remote window too (code-server, Remote-SSH)", () => {
    for (const [key, property] of Object.entries(properties)) {
      assert.ok(userSettingReachesRemoteWindow(property.scope), `${key} has scope ${String(property.scope)}, which a remote window ignores in the User settings`);
    }
  });

  it("targets VS Code 1.85 with matching typings, and can be packaged", () => {
    assert.equal(manifest.engines.vscode, "^1.85.0");
    assert.match(manifest.devDependencies["@types/vscode"], /^~1\.85\./);
    assert.deepEqual(manifest.repository, { type: "git", url: "https://github.com/nabla-lang/nabla" });
    assert.equal(manifest.license, "MIT");
    assert.ok(fs.existsSync(path.join(root, "LICENSE")));
    assert.deepEqual(manifest.activationEvents, ["onLanguage:nabla"]);
  });

  it("packages every contributed file and the bundled client", () => {
    const ignore = fs.readFileSync(path.join(root, ".vscodeignore"), "utf8");
    const included = ignore
      .split(/\r?\n/)
      .filter((line) => line.startsWith("!"))
      .map((line) => line.slice(1));
    const needed = [
      manifest.main,
      manifest.contributes.languages[0].configuration,
      manifest.contributes.grammars[0].path,
      manifest.contributes.snippets[0].path,
    ].map((file) => path.posix.normalize(file));
    for (const file of needed) {
      assert.ok(included.includes(file), `.vscodeignore keeps ${file}`);
    }
  });
});

describe("README", () => {
  const readme = fs.readFileSync(path.join(root, "README.md"), "utf8");

  it("documents every setting and command", () => {
    for (const key of Object.keys(properties)) {
      assert.ok(readme.includes(`\`${key}\``), `README mentions ${key}`);
    }
    for (const command of manifest.contributes.commands) {
      assert.ok(readme.includes(`Nabla: ${command.title}`), `README mentions "Nabla: ${command.title}"`);
    }
  });
});

describe("readSettings", () => {
  it("returns the defaults when nothing is set", () => {
    assert.deepEqual(readSettings(() => undefined), DEFAULT_SETTINGS);
  });

  it("reads and trims the values", () => {
    const values: Record<string, unknown> = {
      "server.path": "  /opt/nabla  ",
      "server.extraArgs": ["--log", "debug"],
      "codeLens.enable": false,
    };
    assert.deepEqual(readSettings((key) => values[key]), {
      serverPath: "/opt/nabla",
      serverExtraArgs: ["--log", "debug"],
      codeLensEnable: false,
    });
  });

  it("falls back to the defaults for values of the wrong type", () => {
    const values: Record<string, unknown> = {
      "server.path": 3,
      "server.extraArgs": ["--log", 7],
      "codeLens.enable": "yes",
    };
    assert.deepEqual(readSettings((key) => values[key]), DEFAULT_SETTINGS);
  });
});

describe("launch", () => {
  it("starts `nabla lsp` with the extra arguments after it", () => {
    assert.deepEqual(serverArguments(DEFAULT_SETTINGS), ["lsp"]);
    assert.deepEqual(serverArguments({ ...DEFAULT_SETTINGS, serverExtraArgs: ["--log", "debug"] }), [
      "lsp",
      "--log",
      "debug",
    ]);
  });

  it("asks for run-test code lenses wired to nabla.runTest", () => {
    const options = initializationOptions(DEFAULT_SETTINGS);
    assert.deepEqual(options, { testCodeLens: { enable: true, command: COMMANDS.runTest } });
    assert.deepEqual(JSON.parse(JSON.stringify(options)), options);
    assert.equal(initializationOptions({ ...DEFAULT_SETTINGS, codeLensEnable: false }).testCodeLens.enable, false);
  });
});

describe("snippets", () => {
  const snippets = readJson<Record<string, { prefix: string | string[]; body: string[]; description: string }>>(
    "snippets/nabla.json",
  );

  it("offer function, loop, if, test and var Tensor", () => {
    const prefixes = Object.values(snippets).flatMap((s) => (Array.isArray(s.prefix) ? s.prefix : [s.prefix]));
    for (const prefix of ["function", "loop", "if", "test", "var"]) {
      assert.ok(prefixes.includes(prefix), `a snippet has the prefix ${prefix}`);
    }
    assert.match(snippets["var Tensor"].body[0], /^var Tensor /);
  });

  it("each have a description and a body", () => {
    for (const [name, snippet] of Object.entries(snippets)) {
      assert.ok(snippet.description.length > 0, `${name} has a description`);
      assert.ok(snippet.body.length > 0, `${name} has a body`);
    }
  });
});

describe("language configuration", () => {
  interface Configuration {
    comments: { lineComment: string; blockComment: [string, string] };
    brackets: [string, string][];
    autoClosingPairs: { open: string; close: string }[];
    wordPattern: string;
    indentationRules: { increaseIndentPattern: string; decreaseIndentPattern: string };
    onEnterRules: { beforeText: string; afterText?: string; previousLineText?: string }[];
    folding: { markers: { start: string; end: string } };
  }
  const configuration = readJson<Configuration>("language-configuration.json");

  it("knows Nabla's comments and brackets", () => {
    assert.deepEqual(configuration.comments, { lineComment: "//", blockComment: ["/*", "*/"] });
    assert.deepEqual(configuration.brackets, [["{", "}"], ["[", "]"], ["(", ")"]]);
    const opens = configuration.autoClosingPairs.map((pair) => pair.open);
    assert.deepEqual(opens, ["{", "[", "(", '"', "'", "/*"]);
  });

  it("selects whole identifiers and numbers as words", () => {
    const word = new RegExp(`^(?:${configuration.wordPattern})$`);
    for (const text of ["log_softmax", "_x1", "F1", "42", "1.0", ".5", "2.", "3e-4", "6.02E23"]) {
      assert.match(text, word);
    }
    for (const text of ["a-b", "x.y", "@"]) {
      assert.doesNotMatch(text, word);
    }
  });

  it("indents after an opening bracket and outdents at a closing one", () => {
    const increase = new RegExp(configuration.indentationRules.increaseIndentPattern);
    const decrease = new RegExp(configuration.indentationRules.decreaseIndentPattern);
    for (const line of ["if (x > 0) {", "loop (int i = 0; i < n; i++) {", "Tensor m[2][2] = [", "print(a,", "} else {"]) {
      assert.match(line, increase);
    }
    for (const line of ["x = 1;", "// {", "if (x) { y = 1; }"]) {
      assert.doesNotMatch(line, increase);
    }
    for (const line of ["}", "    } elif (x) {", "];", ");"]) {
      assert.match(line, decrease);
    }
    assert.doesNotMatch("x = a[1];", decrease);
  });

  it("has regular expressions that compile", () => {
    const patterns = [
      configuration.folding.markers.start,
      configuration.folding.markers.end,
      ...configuration.onEnterRules.flatMap((rule) =>
        [rule.beforeText, rule.afterText, rule.previousLineText].filter((p): p is string => p !== undefined),
      ),
    ];
    for (const pattern of patterns) {
      assert.doesNotThrow(() => new RegExp(pattern), pattern);
    }
    assert.match("// #region training", new RegExp(configuration.folding.markers.start));
  });
});
