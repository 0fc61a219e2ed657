/**
 * Activates the extension against a stand-in for the `vscode` module (no VS Code is available
 * here) and checks the wiring that the pure modules cannot: every declared command is registered,
 * a missing binary is reported with its fix, the code lens's `nabla.runTest` types the right
 * command line into a terminal, and the real language client launches a server with `lsp` and
 * the shared `initializationOptions`, and shuts it down.
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
import { DEFAULT_SETTINGS } from "../../src/settings";

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
  toString(): string {
    return this.text;
  }
}

interface Recorded {
  commands: Map<string, Callable>;
  errors: { message: string; items: unknown[] }[];
  terminals: { options: { name?: string; cwd?: string }; sent: string[] }[];
  settings: Record<string, unknown>;
}

function fakeVscode(recorded: Recorded): unknown {
  const disposable = { dispose: () => undefined };
  return withFallback({
    version: "1.85.0",
    Uri: FakeUri,
    env: { shell: "/bin/bash" },
    commands: {
      registerCommand(id: string, handler: Callable) {
        recorded.commands.set(id, handler);
        return disposable;
      },
      executeCommand: () => Promise.resolve(undefined),
    },
    window: {
      activeTextEditor: undefined,
      createOutputChannel: () => ({ append: () => undefined, appendLine: () => undefined, show: () => undefined, dispose: () => undefined }),
      showErrorMessage(message: string, ...items: unknown[]) {
        recorded.errors.push({ message, items });
        return Promise.resolve(undefined);
      },
      onDidCloseTerminal: () => disposable,
      createTerminal(options: { name?: string; cwd?: string }) {
        const terminal = { options, sent: [] as string[] };
        recorded.terminals.push(terminal);
        return {
          show: () => undefined,
          sendText: (text: string) => terminal.sent.push(text),
          dispose: () => undefined,
        };
      },
    },
    workspace: {
      workspaceFolders: undefined,
      textDocuments: [],
      getConfiguration: () => ({ get: (key: string) => recorded.settings[key] }),
      getWorkspaceFolder: () => undefined,
      onDidChangeConfiguration: () => disposable,
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
  const recorded: Recorded = { commands: new Map(), errors: [], terminals: [], settings: {} };
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
    const context = { subscriptions: [] as unknown[] };
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
      `${binary} test '${file}' --filter 'gradient of a '\\''matrix'\\'' product'`,
    ]);
  });

  it("reuses the terminal for Run File", { skip: process.platform === "win32" }, async () => {
    const file = path.join(os.tmpdir(), "model.nb");
    const runFile = recorded.commands.get(COMMANDS.runFile);
    assert.ok(runFile !== undefined);
    await runFile(FakeUri.file(file));
    assert.equal(recorded.terminals.length, 1);
    assert.equal(recorded.terminals[0].sent.at(-1), `${path.join(bin, "nabla")} run ${file}`);
  });

  it("asks for a file when there is nothing to run", async () => {
    const before = recorded.errors.length;
    const runTests = recorded.commands.get(COMMANDS.runTests);
    assert.ok(runTests !== undefined);
    await runTests();
    assert.match(recorded.errors[before]?.message ?? "", /open a \.nb file/);
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
