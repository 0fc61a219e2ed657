/**
 * Activates the extension against a stand-in for the `vscode` module (no VS Code is available
 * here) and checks the wiring that the pure modules cannot: every declared command is registered,
 * a missing binary is reported with its fix, the code lens's `nabla.runTest` types the right
 * command line into a terminal, the REPL runs in a terminal of its own and receives selections,
 * a `nabla.server.path` that arrives after activation or changes (re)starts the server with it,
 * and the real language client launches a server with `lsp` and the shared
 * `initializationOptions`, and shuts it down; Show Computational Graph runs `nabla run --graph`
 * and shows the picture in a webview that runs no script.
 *
 * The stand-in implements what the extension calls; anything else (what `vscode-languageclient`
 * touches when it loads) is an inert object that accepts any use.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as nodeModule from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { after, before, describe, it } from "node:test";
import { COMMANDS } from "../../src/commands";
import { initializationOptions, serverArguments } from "../../src/launch";
import { DEFAULT_SETTINGS, SETTINGS_SECTION } from "../../src/settings";
import { userSettingReachesRemoteWindow } from "./configurationScopes";

type Callable = (...args: unknown[]) => unknown;

/** An object that can be read, called, constructed and extended, all to no effect. */
function inert(): unknown {
  const target = function () {
    // Nothing: this only gives the proxy a callable, constructible target.
  };
  return new Proxy(target, {
    get(object, property) {
      if (property === "prototype") {
        return object.prototype as unknown;
      }
      if (property === "then" || typeof property === "symbol") {
        return undefined;
      }
      return inert();
    },
    apply: () => inert(),
    construct: () => inert() as object,
  });
}

/** `stub`, with every property it lacks answered by {@link inert}. */
function withFallback<T extends object>(stub: T): T {
  return new Proxy(stub, {
    get(object, property, receiver) {
      if (property in object || typeof property === "symbol") {
        const value = Reflect.get(object, property, receiver) as unknown;
        return value !== null && typeof value === "object" && !Array.isArray(value) ? withFallback(value) : value;
      }
      return inert();
    },
  });
}

class FakeUri {
  private constructor(
    readonly scheme: string,
    private readonly text: string,
  ) {}
  static parse(text: string): FakeUri {
    return new FakeUri(new URL(text).protocol.replace(/:$/, ""), text);
  }
  static file(file: string): FakeUri {
    return new FakeUri("file", pathToFileURL(file).toString());
  }
  get fsPath(): string {
    return fileURLToPath(this.text);
  }
  with(change: { query: string }): FakeUri {
    return new FakeUri(this.scheme, `${this.text.replace(/\?.*$/, "")}?${change.query}`);
  }
  toString(): string {
    return this.text;
  }
}

interface TerminalOptions {
  name?: string;
  cwd?: string;
  shellPath?: string;
  shellArgs?: string[];
}

interface RecordedTerminal {
  options: TerminalOptions;
  sent: string[];
  /** Set to end the terminal's process. */
  exitStatus: { code: number } | undefined;
}

interface Recorded {
  commands: Map<string, Callable>;
  errors: { message: string; items: unknown[] }[];
  terminals: RecordedTerminal[];
  /** The remote machine's settings (code-server's `Machine/settings.json`), by key in the section. */
  settings: Record<string, unknown>;
  /** The User settings file, which a remote window reads only for some scopes. */
  userSettings: Record<string, unknown>;
  /** The extension's listeners of `onDidChangeConfiguration`. */
  configurationListeners: ((event: { affectsConfiguration(section: string): boolean }) => unknown)[];
  /** The extension's listeners of `onDidGrantWorkspaceTrust`. */
  trustListeners: (() => unknown)[];
  activeTextEditor: FakeEditor | undefined;
  /** What the extension wrote to its output channels, a line each. */
  output: string[];
  panels: RecordedPanel[];
}

interface RecordedPanel {
  viewType: string;
  title: string;
  column: unknown;
  options: { enableScripts?: boolean; localResourceRoots?: FakeUri[] };
  html: string;
}

class FakePosition {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

class FakeSelection {
  readonly active: FakePosition;
  constructor(
    readonly anchor: FakePosition,
    active: FakePosition,
  ) {
    this.active = active;
  }
  get isEmpty(): boolean {
    return this.anchor.line === this.active.line && this.anchor.character === this.active.character;
  }
}

/** An editor on `text` with a selection, as far as the REPL commands use one. */
class FakeEditor {
  revealed = 0;
  constructor(
    private readonly text: string,
    public selection: FakeSelection,
  ) {}
  get document(): unknown {
    const lines = this.text.split("\n");
    const offset = (position: FakePosition): number =>
      lines.slice(0, position.line).reduce((sum, line) => sum + line.length + 1, 0) + position.character;
    return {
      uri: FakeUri.file(path.join(os.tmpdir(), "session.nb")),
      lineCount: lines.length,
      lineAt: (line: number) => ({ text: lines[line] }),
      getText: (range: FakeSelection) => {
        const [from, to] = [offset(range.anchor), offset(range.active)].sort((a, b) => a - b);
        return this.text.slice(from, to);
      },
    };
  }
  revealRange(): void {
    this.revealed += 1;
  }
}

/** The scopes `package.json` declares, by setting key relative to the `nabla` section. */
function declaredScopes(): Record<string, string | undefined> {
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../../../package.json"), "utf8")) as {
    contributes: { configuration: { properties: Record<string, { scope?: string }> } };
  };
  const scopes: Record<string, string | undefined> = {};
  for (const [key, property] of Object.entries(manifest.contributes.configuration.properties)) {
    scopes[key.slice(SETTINGS_SECTION.length + 1)] = property.scope;
  }
  return scopes;
}

/**
 * A remote window, as code-server's is: the remote settings win over the User settings, and
 * these count only for the scopes VS Code reads from them there.
 */
function fakeVscode(recorded: Recorded): unknown {
  const scopes = declaredScopes();
  const setting = (key: string): unknown => {
    if (key in recorded.settings) {
      return recorded.settings[key];
    }
    return userSettingReachesRemoteWindow(scopes[key]) ? recorded.userSettings[key] : undefined;
  };
  const disposable = { dispose: () => undefined };
  return withFallback({
    version: "1.85.0",
    Uri: FakeUri,
    Position: FakePosition,
    Selection: FakeSelection,
    Range: FakeSelection,
    ViewColumn: { Beside: -2 },
    ProgressLocation: { Notification: 15 },
    RelativePattern: class {
      constructor(
        readonly base: unknown,
        readonly pattern: string,
      ) {}
    },
    env: { shell: "/bin/bash", remoteName: "code-server" },
    commands: {
      registerCommand(id: string, handler: Callable) {
        recorded.commands.set(id, handler);
        return disposable;
      },
      executeCommand: () => Promise.resolve(undefined),
    },
    window: {
      get activeTextEditor() {
        return recorded.activeTextEditor;
      },
      createOutputChannel: () => ({
        append: (text: string) => recorded.output.push(...text.split("\n").filter((line) => line !== "")),
        appendLine: (line: string) => recorded.output.push(line),
        clear: () => recorded.output.splice(0),
        show: () => undefined,
        dispose: () => undefined,
      }),
      withProgress: (_options: unknown, task: Callable) =>
        task({ report: () => undefined }, { isCancellationRequested: false, onCancellationRequested: () => disposable }),
      createWebviewPanel(viewType: string, title: string, column: unknown, options: RecordedPanel["options"]) {
        const panel: RecordedPanel = { viewType, title, column, options, html: "" };
        recorded.panels.push(panel);
        return {
          get title() {
            return panel.title;
          },
          set title(value: string) {
            panel.title = value;
          },
          webview: {
            cspSource: "vscode-webview-resource:",
            asWebviewUri: (uri: FakeUri) => uri,
            set html(value: string) {
              panel.html = value;
            },
          },
          reveal: () => undefined,
          onDidDispose: () => disposable,
          dispose: () => undefined,
        };
      },
      showErrorMessage(message: string, ...items: unknown[]) {
        recorded.errors.push({ message, items });
        return Promise.resolve(undefined);
      },
      onDidCloseTerminal: () => disposable,
      createTerminal(options: TerminalOptions) {
        const terminal: RecordedTerminal = { options, sent: [], exitStatus: undefined };
        recorded.terminals.push(terminal);
        return {
          show: () => undefined,
          sendText: (text: string, addNewLine?: boolean) => terminal.sent.push(addNewLine === false ? text : `${text}\r`),
          dispose: () => undefined,
          get exitStatus() {
            return terminal.exitStatus;
          },
        };
      },
    },
    workspace: {
      workspaceFolders: undefined,
      textDocuments: [],
      getConfiguration: () => ({ get: setting }),
      getWorkspaceFolder: () => undefined,
      onDidChangeConfiguration(listener: Recorded["configurationListeners"][number]) {
        recorded.configurationListeners.push(listener);
        return disposable;
      },
      onDidGrantWorkspaceTrust(listener: () => unknown) {
        recorded.trustListeners.push(listener);
        return disposable;
      },
      createFileSystemWatcher: () => ({
        onDidCreate: () => disposable,
        onDidChange: () => disposable,
        onDidDelete: () => disposable,
        dispose: () => undefined,
      }),
    },
  });
}

/**
 * Writes a minimal language server that appends what it receives to `record`, one JSON object a
 * line: its arguments, the `initializationOptions`, `shutdown` and `exit`.
 */
function writeRecordingServer(directory: string, record: string): string {
  const server = path.join(directory, "recording-server");
  const source = `#!${process.execPath}
const fs = require("fs");
const rpc = require(${JSON.stringify(require.resolve("vscode-jsonrpc/node"))});
const log = (entry) => fs.appendFileSync(${JSON.stringify(record)}, JSON.stringify(entry) + "\\n");
log({ args: process.argv.slice(2) });
const connection = rpc.createMessageConnection(
  new rpc.StreamMessageReader(process.stdin), new rpc.StreamMessageWriter(process.stdout));
connection.onRequest("initialize", (params) => {
  log({ initializationOptions: params.initializationOptions });
  return { capabilities: {} };
});
connection.onRequest("shutdown", () => { log({ shutdown: true }); return null; });
connection.onNotification("exit", () => { log({ exit: true }); process.exit(0); });
connection.listen();
`;
  fs.writeFileSync(server, source);
  fs.chmodSync(server, 0o755);
  return server;
}

/** The entries `record` holds once `done` says they are complete; fails after ten seconds. */
async function recordedEntries(record: string, done: (entries: object[]) => boolean): Promise<object[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const entries = fs.existsSync(record)
      ? fs
          .readFileSync(record, "utf8")
          .split("\n")
          .filter((line) => line !== "")
          .map((line) => JSON.parse(line) as object)
      : [];
    if (done(entries)) {
      return entries;
    }
    if (Date.now() > deadline) {
      assert.fail(`the recording server wrote only ${JSON.stringify(entries)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

interface ExtensionModule {
  activate(context: { subscriptions: unknown[] }): Promise<void>;
  deactivate(): Promise<void>;
}

describe("activation", () => {
  const recorded: Recorded = {
    commands: new Map(),
    errors: [],
    terminals: [],
    settings: {},
    userSettings: {},
    configurationListeners: [],
    trustListeners: [],
    activeTextEditor: undefined,
    output: [],
    panels: [],
  };
  const moduleWithLoad = nodeModule as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const originalLoad = moduleWithLoad._load;
  const originalPath = process.env.PATH;
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), "nabla-activation-"));
  let extension: ExtensionModule;

  before(() => {
    const vscode = fakeVscode(recorded);
    moduleWithLoad._load = function (this: unknown, request: string, ...rest: unknown[]) {
      return request === "vscode" ? vscode : originalLoad.call(this, request, ...rest);
    };
    // An empty PATH: the binary is missing until a test puts one there.
    process.env.PATH = bin;
    // The extension must be loaded after the hook is in place, so a static import will not do.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    extension = require("../../src/extension") as ExtensionModule;
  });

  after(() => {
    moduleWithLoad._load = originalLoad;
    process.env.PATH = originalPath;
    fs.rmSync(bin, { recursive: true, force: true });
  });

  it("registers every command and reports the missing binary with its fix", async () => {
    const context = { subscriptions: [] as unknown[], storageUri: FakeUri.file(path.join(bin, "storage")) };
    await extension.activate(context);
    assert.deepEqual([...recorded.commands.keys()].sort(), Object.values(COMMANDS).sort());
    assert.equal(recorded.errors.length, 1);
    const [error] = recorded.errors;
    assert.match(error.message, /could not find `nabla` on PATH/);
    assert.match(error.message, /cargo install --path crates\/cli/);
    assert.deepEqual(error.items, ["Open Settings", "Retry"]);
    assert.ok(context.subscriptions.length >= Object.keys(COMMANDS).length);
  });

  it("runs one test from the code lens's arguments, quoted for the shell", { skip: process.platform === "win32" }, async () => {
    const binary = path.join(bin, "nabla");
    fs.writeFileSync(binary, "#!/bin/sh\n");
    fs.chmodSync(binary, 0o755);
    const file = path.join(os.tmpdir(), "my project", "model.nb");
    const runTest = recorded.commands.get(COMMANDS.runTest);
    assert.ok(runTest !== undefined);
    await runTest(pathToFileURL(file).toString(), "gradient of a 'matrix' product");
    assert.equal(recorded.terminals.length, 1);
    const [terminal] = recorded.terminals;
    assert.equal(terminal.options.name, "Nabla");
    assert.deepEqual(terminal.sent, [
      `${binary} test '${file}' --filter 'gradient of a '\\''matrix'\\'' product'\r`,
    ]);
  });

  it("reuses the terminal for Run File", { skip: process.platform === "win32" }, async () => {
    const file = path.join(os.tmpdir(), "model.nb");
    const runFile = recorded.commands.get(COMMANDS.runFile);
    assert.ok(runFile !== undefined);
    await runFile(FakeUri.file(file));
    assert.equal(recorded.terminals.length, 1);
    assert.equal(recorded.terminals[0].sent.at(-1), `${path.join(bin, "nabla")} run ${file}\r`);
  });

  it("asks for a file when there is nothing to run", async () => {
    const before = recorded.errors.length;
    const runTests = recorded.commands.get(COMMANDS.runTests);
    assert.ok(runTests !== undefined);
    await runTests();
    assert.match(recorded.errors[before]?.message ?? "", /open a \.nb file/);
  });

  it("starts `nabla repl` in a terminal of its own, once", { skip: process.platform === "win32" }, async () => {
    const startRepl = recorded.commands.get(COMMANDS.startRepl);
    assert.ok(startRepl !== undefined);
    const before = recorded.terminals.length;
    await startRepl();
    await startRepl();
    assert.equal(recorded.terminals.length, before + 1);
    const repl = recorded.terminals.at(-1);
    assert.deepEqual(repl?.options, {
      name: "Nabla REPL",
      shellPath: path.join(bin, "nabla"),
      shellArgs: ["repl"],
      cwd: undefined,
    });
  });

  it("sends the selection as one entry, or the current line and moves on", { skip: process.platform === "win32" }, async () => {
    const send = recorded.commands.get(COMMANDS.sendToRepl);
    assert.ok(send !== undefined);
    const text = "function float sq(float x) {\n    return x * x;\n}\nsq(3.0)\n";
    const at = (line: number, character: number) => new FakePosition(line, character);
    const repl = recorded.terminals.at(-1);
    assert.ok(repl !== undefined);
    // Three selected lines go as one bracketed paste, then Enter.
    recorded.activeTextEditor = new FakeEditor(text, new FakeSelection(at(0, 0), at(2, 1)));
    await send();
    assert.equal(repl.sent.at(-1), "\u001b[200~function float sq(float x) {\n    return x * x;\n}\u001b[201~\r");
    // Nothing selected: the cursor's line, and the cursor moves to the next line.
    const editor = new FakeEditor(text, new FakeSelection(at(3, 2), at(3, 2)));
    recorded.activeTextEditor = editor;
    await send();
    assert.equal(repl.sent.at(-1), "sq(3.0)\r");
    assert.equal(editor.selection.active.line, 4);
    assert.equal(editor.revealed, 1);
    // Once the REPL has exited, sending starts a new one.
    repl.exitStatus = { code: 0 };
    const before = recorded.terminals.length;
    recorded.activeTextEditor = new FakeEditor(text, new FakeSelection(at(3, 0), at(3, 0)));
    await send();
    assert.equal(recorded.terminals.length, before + 1);
    assert.deepEqual(recorded.terminals.at(-1)?.sent, ["sq(3.0)\r"]);
    recorded.activeTextEditor = undefined;
  });

  it("draws the graph with `nabla run --graph` and shows it beside the editor, in a webview without scripts", { skip: process.platform === "win32" }, async () => {
    const binary = path.join(bin, "nabla");
    // A stand-in for `nabla run --graph OUT FILE`: prints what it was asked and writes OUT.
    fs.writeFileSync(binary, `#!/bin/sh\necho "$1 $2 $4"\nprintf '<svg xmlns="http://www.w3.org/2000/svg"/>' > "$3"\n`);
    fs.chmodSync(binary, 0o755);
    const file = path.join(os.tmpdir(), "my model.nb");
    const showGraph = recorded.commands.get(COMMANDS.showGraph);
    assert.ok(showGraph !== undefined);
    await showGraph(FakeUri.file(file));
    const out = path.join(bin, "storage", "graphs");
    const [written] = fs.readdirSync(out);
    assert.match(written, /^my model-[0-9a-f]{10}\.graph\.svg$/);
    assert.deepEqual(recorded.output, [`$ ${binary} run --graph ${path.join(out, written)} ${file}`, `run --graph ${file}`, "[exit 0]"]);
    assert.equal(recorded.panels.length, 1);
    const [panel] = recorded.panels;
    assert.deepEqual([panel.viewType, panel.title, panel.column], ["nabla.picture", "Graph: my model.nb", { viewColumn: -2, preserveFocus: true }]);
    assert.equal(panel.options.enableScripts, false);
    assert.deepEqual(panel.options.localResourceRoots?.map((root) => root.fsPath), [out]);
    assert.ok(panel.html.includes(`src="${FakeUri.file(path.join(out, written)).toString()}?v=`), panel.html);
    assert.ok(panel.html.includes("default-src 'none'".replace(/'/g, "&#39;")), panel.html);
    // A run that fails opens nothing and says where its output is.
    fs.writeFileSync(binary, "#!/bin/sh\necho 'error[R0604]: made a NaN' >&2\nexit 1\n");
    await showGraph(FakeUri.file(file));
    assert.equal(recorded.panels.length, 1);
    assert.deepEqual(recorded.output.slice(1), ["error[R0604]: made a NaN", "[exit 1]"]);
    assert.match(recorded.errors.at(-1)?.message ?? "", /`nabla run --graph` failed \(exit 1\)/);
  });

  // A fresh profile's first window: the extension activated before `nabla.server.path` reached it
  // (the first test saw no binary), then the user setting arrives. No reload is needed.
  it("starts the server when nabla.server.path arrives after activation, and restarts it on a new path", { skip: process.platform === "win32" }, async () => {
    const record = path.join(bin, "record-change.jsonl");
    recorded.settings["server.path"] = writeRecordingServer(bin, record);
    const affects = (changed: string) => ({ affectsConfiguration: (section: string) => section === changed });
    const change = async (section: string) => {
      for (const listener of recorded.configurationListeners) {
        await listener(affects(section));
      }
    };
    // A change elsewhere restarts nothing.
    await change("editor.fontSize");
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(fs.existsSync(record), false);
    await change("nabla.server.path");
    const started = await recordedEntries(record, (entries) => entries.length >= 2);
    assert.deepEqual(started[0], { args: serverArguments(DEFAULT_SETTINGS) });
    // Another path: the server there starts, read from the settings at that moment, and the
    // first one is shut down.
    const other = fs.mkdtempSync(path.join(bin, "other-"));
    const otherRecord = path.join(other, "record.jsonl");
    recorded.settings["server.path"] = writeRecordingServer(other, otherRecord);
    await change("nabla.server.path");
    const restarted = await recordedEntries(otherRecord, (entries) => entries.length >= 2);
    assert.deepEqual(restarted[0], { args: serverArguments(DEFAULT_SETTINGS) });
    const stopped = await recordedEntries(record, (entries) => entries.length >= 4);
    assert.deepEqual(stopped.slice(2), [{ shutdown: true }, { exit: true }]);
    // Trusting the workspace, which makes its restricted settings count, restarts it too.
    assert.equal(recorded.trustListeners.length, 1);
    await recorded.trustListeners[0]();
    const again = await recordedEntries(otherRecord, (entries) => entries.length >= 6);
    assert.deepEqual(again.slice(2), [{ shutdown: true }, { exit: true }, { args: serverArguments(DEFAULT_SETTINGS) }, { initializationOptions: initializationOptions(DEFAULT_SETTINGS) }]);
  });

  // What code-server showed with `nabla.server.path` in the User settings of a fresh profile: the
  // setting never reached the extension (a remote window drops `machine-overridable` settings
  // from the User settings), so it looked for `nabla` on PATH and found none, or another one.
  it("takes nabla.server.path from the User settings in a remote window", { skip: process.platform === "win32" }, async () => {
    const record = path.join(bin, "record-user.jsonl");
    delete recorded.settings["server.path"];
    recorded.userSettings["server.path"] = writeRecordingServer(bin, record);
    const restart = recorded.commands.get(COMMANDS.restartServer);
    assert.ok(restart !== undefined);
    await restart();
    const started = await recordedEntries(record, (entries) => entries.length >= 2);
    assert.deepEqual(started[0], { args: serverArguments(DEFAULT_SETTINGS) });
    delete recorded.userSettings["server.path"];
  });

  it("starts the server with `lsp` and the shared initialization options, and stops it", { skip: process.platform === "win32" }, async () => {
    const record = path.join(bin, "record.jsonl");
    recorded.settings["server.path"] = writeRecordingServer(bin, record);
    const restart = recorded.commands.get(COMMANDS.restartServer);
    assert.ok(restart !== undefined);
    await restart();
    const started = await recordedEntries(record, (entries) => entries.length >= 2);
    assert.deepEqual(started, [
      { args: serverArguments(DEFAULT_SETTINGS) },
      { initializationOptions: initializationOptions(DEFAULT_SETTINGS) },
    ]);
    await extension.deactivate();
    const stopped = await recordedEntries(record, (entries) => entries.length >= 4);
    assert.deepEqual(stopped.slice(2), [{ shutdown: true }, { exit: true }]);
  });

  it("deactivates without a running server", async () => {
    await extension.deactivate();
  });
});
