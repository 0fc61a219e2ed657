/**
 * Talks to a real `nabla lsp` over stdio, launched exactly as the extension launches it (the same
 * arguments and `initializationOptions`, from `src/launch.ts`), and checks the features the
 * extension relies on: diagnostics, hover, completion and the run-test code lens.
 *
 * The binary is `$NABLA_BIN`, or `nabla` on PATH. Without one the test fails: it never passes by
 * skipping. Run it with `npm run test:protocol`.
 */
import * as assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { after, describe, it } from "node:test";
import { type MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from "vscode-jsonrpc/node";
import type {
  ClientCapabilities,
  CodeLens,
  CompletionItem,
  CompletionList,
  Diagnostic,
  Hover,
  InitializeParams,
  InitializeResult,
  MarkedString,
  MarkupContent,
  PublishDiagnosticsParams,
} from "vscode-languageclient";
import { COMMANDS } from "../../src/commands";
import { initializationOptions, serverArguments } from "../../src/launch";
import { nodeEnvironment, resolveServerPath } from "../../src/serverPath";
import { DEFAULT_SETTINGS } from "../../src/settings";

/** How long to wait for any one answer; a debug build of the server may be slow to start. */
const TIMEOUT_MS = Number(process.env.NABLA_LSP_TIMEOUT_MS ?? 20_000);

/**
 * The document the test edits. Version 1 uses a name that is declared nowhere, which the checker
 * must report as an error with an `E0xxx` code; version 2 fixes it.
 */
const UNDEFINED_NAME = "undefined_name";
const BROKEN = [
  "// The protocol test's document.",
  "var Tensor w[2][3] = zeros([2, 3]);",
  `float y = sum(w) + ${UNDEFINED_NAME};`,
  "print(y);",
  "",
  'test "adds up" {',
  "    assert(1 + 1 == 2);",
  "}",
  "",
].join("\n");
const FIXED = BROKEN.replace(UNDEFINED_NAME, "1.0");
const ERROR_LINE = 2;
const HOVER_POSITION = { line: 2, character: "float y = sum(".length }; // on `w`
const COMPLETION_POSITION = { line: 3, character: "print(".length };
const TEST_LINE = 5;
const TEST_NAME = "adds up";

/** What the extension's language client says it can do, reduced to what this test exercises. */
const CLIENT_CAPABILITIES: ClientCapabilities = {
  general: { positionEncodings: ["utf-16"] },
  workspace: { configuration: true, workspaceFolders: true },
  textDocument: {
    synchronization: { dynamicRegistration: false, didSave: true },
    publishDiagnostics: { relatedInformation: true, versionSupport: true, codeDescriptionSupport: true },
    hover: { contentFormat: ["markdown", "plaintext"] },
    completion: { completionItem: { snippetSupport: true, documentationFormat: ["markdown", "plaintext"] } },
    codeLens: {},
  },
};

function findBinary(): string {
  const configured = process.env.NABLA_BIN ?? "";
  const resolution = resolveServerPath(configured, nodeEnvironment(process.cwd()));
  if (resolution.kind === "found") {
    return resolution.path;
  }
  const where = configured === "" ? "`nabla` is not on PATH" : `NABLA_BIN=${configured} is not an executable file`;
  throw new Error(
    `The protocol test needs the Nabla binary, but ${where}. ` +
      "Build it with `cargo build -p cli` at the repository root, then run " +
      "`NABLA_BIN=<repository>/target/debug/nabla npm run test:protocol`, or put `nabla` on PATH.",
  );
}

/** Resolves with the first value `poll` returns that is not `undefined`, or rejects after the timeout. */
function waitFor<T>(what: string, poll: () => T | undefined, server: ServerUnderTest): Promise<T> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const value = poll();
      if (value !== undefined) {
        resolve(value);
        return true;
      }
      return false;
    };
    if (check()) {
      return;
    }
    const timer = setTimeout(() => {
      clearInterval(interval);
      reject(new Error(`Timed out after ${TIMEOUT_MS} ms waiting for ${what}.${server.logTail()}`));
    }, TIMEOUT_MS);
    const interval = setInterval(() => {
      if (check()) {
        clearInterval(interval);
        clearTimeout(timer);
      }
    }, 20);
  });
}

function withTimeout<T>(what: string, promise: Promise<T>, server: ServerUnderTest): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`Timed out after ${TIMEOUT_MS} ms waiting for ${what}.${server.logTail()}`)),
      TIMEOUT_MS,
    );
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** A running `nabla lsp` and the JSON-RPC connection to it. */
class ServerUnderTest {
  readonly diagnostics: PublishDiagnosticsParams[] = [];
  private stderr = "";
  /** Settles with the exit code once the process has exited; never rejects. */
  private readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  private constructor(
    readonly process: ChildProcessWithoutNullStreams,
    readonly connection: MessageConnection,
    readonly binary: string,
  ) {
    process.stderr.setEncoding("utf8");
    process.stderr.on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) =>
      process.on("exit", (code, signal) => {
        this.exitCode = code;
        if (code === null) {
          this.stderr += `\n(killed by ${signal})`;
        }
        resolve(code);
      }),
    );
    // A write to a server that has died fails; the request that needed it reports the exit instead.
    connection.onError(() => undefined);
    connection.onNotification("textDocument/publishDiagnostics", (params: PublishDiagnosticsParams) => {
      this.diagnostics.push(params);
    });
    connection.onNotification(() => {
      // window/logMessage, $/progress and the like carry nothing this test checks.
    });
    connection.onRequest("workspace/configuration", (params: { items: unknown[] }) => params.items.map(() => null));
    connection.onRequest(() => null);
    connection.listen();
  }

  static async start(): Promise<ServerUnderTest> {
    const binary = findBinary();
    const child = spawn(binary, serverArguments(DEFAULT_SETTINGS), { stdio: "pipe" });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (error) => reject(new Error(`Could not start ${binary}: ${error.message}`)));
    });
    const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    return new ServerUnderTest(child, connection, binary);
  }

  request<R>(method: string, params: unknown): Promise<R> {
    const answer = this.connection.sendRequest<R>(method, params);
    const died = this.exited.then((code) => {
      throw new Error(`nabla lsp exited (code ${code}) before answering ${method}.${this.logTail()}`);
    });
    return withTimeout(`the answer to ${method}`, Promise.race([answer, died]), this);
  }

  async notify(method: string, params: unknown): Promise<void> {
    if (this.exitCode !== undefined) {
      throw new Error(`nabla lsp exited (code ${this.exitCode}) before ${method}.${this.logTail()}`);
    }
    await this.connection.sendNotification(method, params);
  }

  /** The end of the server's stderr, to explain a failure. */
  logTail(): string {
    const tail = this.stderr.trim().split("\n").slice(-30).join("\n");
    return tail === "" ? "" : `\nThe server's stderr ends with:\n${tail}`;
  }

  async exit(): Promise<number | null> {
    await this.request("shutdown", null);
    const exited = this.exited;
    await this.notify("exit", null);
    return withTimeout("the server to exit after `exit`", exited, this);
  }

  kill(): void {
    this.connection.dispose();
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill();
    }
  }
}

function markupText(contents: Hover["contents"]): { kind: string; value: string } {
  const one = (content: MarkedString | MarkupContent): { kind: string; value: string } => {
    if (typeof content === "string") {
      return { kind: "markdown", value: content };
    }
    if ("kind" in content) {
      return { kind: content.kind, value: content.value };
    }
    return { kind: "markdown", value: content.value };
  };
  if (Array.isArray(contents)) {
    const parts = contents.map(one);
    return { kind: "markdown", value: parts.map((p) => p.value).join("\n") };
  }
  return one(contents);
}

describe("nabla lsp, as the extension starts it", () => {
  let started: { server: ServerUnderTest; initialized: InitializeResult } | undefined;
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), "nabla-protocol-"));
  const file = path.join(workspace, "main.nb");
  fs.writeFileSync(file, BROKEN);
  const uri = pathToFileURL(file).toString();

  /** The running server; each test after the first needs it. */
  function running(): { server: ServerUnderTest; initialized: InitializeResult } {
    if (started === undefined) {
      throw new Error("nabla lsp did not start; see the first test's failure");
    }
    return started;
  }

  after(() => {
    started?.server.kill();
    fs.rmSync(workspace, { recursive: true, force: true });
  });

  it("starts with the extension's arguments and initialization options", async () => {
    const server = await ServerUnderTest.start();
    const params: InitializeParams = {
      processId: process.pid,
      clientInfo: { name: "nabla protocol test" },
      rootUri: pathToFileURL(workspace).toString(),
      workspaceFolders: [{ uri: pathToFileURL(workspace).toString(), name: "protocol" }],
      capabilities: CLIENT_CAPABILITIES,
      initializationOptions: initializationOptions(DEFAULT_SETTINGS),
    };
    try {
      const initialized = await server.request<InitializeResult>("initialize", params);
      await server.notify("initialized", {});
      started = { server, initialized };
    } catch (error) {
      server.kill();
      throw error;
    }
  });

  it("offers hover, completion, code lenses and document sync", () => {
    const { capabilities } = running().initialized;
    assert.ok(capabilities.hoverProvider, "hoverProvider");
    assert.ok(capabilities.completionProvider, "completionProvider");
    assert.ok(capabilities.codeLensProvider, "codeLensProvider");
    assert.ok(capabilities.textDocumentSync !== undefined, "textDocumentSync");
    const commands = capabilities.executeCommandProvider?.commands ?? [];
    assert.ok(
      !commands.includes(COMMANDS.runTest),
      `${COMMANDS.runTest} is the extension's command; a server that lists it makes the client register it twice`,
    );
  });

  it("publishes an error with a code and source for an undefined name", async () => {
    const { server } = running();
    await server.notify("textDocument/didOpen", {
      textDocument: { uri, languageId: "nabla", version: 1, text: BROKEN },
    });
    const published = await waitFor(
      `a diagnostic on line ${ERROR_LINE} of ${uri}`,
      () => server.diagnostics.find((p) => p.uri === uri && p.diagnostics.some((d) => d.range.start.line === ERROR_LINE)),
      server,
    );
    const diagnostic = published.diagnostics.find((d) => d.range.start.line === ERROR_LINE) as Diagnostic;
    const start = BROKEN.split("\n")[ERROR_LINE].indexOf(UNDEFINED_NAME);
    assert.deepEqual(diagnostic.range, {
      start: { line: ERROR_LINE, character: start },
      end: { line: ERROR_LINE, character: start + UNDEFINED_NAME.length },
    });
    assert.equal(diagnostic.severity, 1, "severity Error");
    assert.equal(diagnostic.source, "nabla");
    assert.match(String(diagnostic.code), /^E\d{4}$/, `an error code such as E0001, not ${JSON.stringify(diagnostic.code)}`);
    assert.match(diagnostic.message, new RegExp(UNDEFINED_NAME));
  });

  it("clears the diagnostics when the error is fixed", async () => {
    const { server } = running();
    const seen = server.diagnostics.length;
    await server.notify("textDocument/didChange", {
      textDocument: { uri, version: 2 },
      contentChanges: [{ text: FIXED }],
    });
    await waitFor(
      "an empty diagnostics list after the fix",
      () =>
        server.diagnostics
          .slice(seen)
          .find((p) => p.uri === uri && p.diagnostics.length === 0 && (p.version === undefined || p.version >= 2)),
      server,
    );
  });

  it("hovers with the declared type in markdown", async () => {
    const { server } = running();
    const hover = await server.request<Hover | null>("textDocument/hover", {
      textDocument: { uri },
      position: HOVER_POSITION,
    });
    assert.ok(hover !== null, "a hover for `w`");
    const { kind, value } = markupText(hover.contents);
    assert.equal(kind, "markdown");
    assert.ok(value.includes("var Tensor[2][3]"), `the hover shows var Tensor[2][3]: ${value}`);
  });

  it("completes built-ins and variables in scope", async () => {
    const { server } = running();
    const result = await server.request<CompletionItem[] | CompletionList | null>("textDocument/completion", {
      textDocument: { uri },
      position: COMPLETION_POSITION,
    });
    assert.ok(result !== null, "a completion list");
    const items = Array.isArray(result) ? result : result.items;
    const labels = items.map((item) => item.label);
    for (const expected of ["softmax", "w", "y"]) {
      assert.ok(labels.includes(expected), `completion offers ${expected}`);
    }
  });

  it("offers a run-test code lens wired to nabla.runTest", async () => {
    const { server, initialized } = running();
    const lenses = (await server.request<CodeLens[] | null>("textDocument/codeLens", { textDocument: { uri } })) ?? [];
    const resolved = await Promise.all(
      lenses.map((lens) =>
        lens.command === undefined && initialized.capabilities.codeLensProvider?.resolveProvider === true
          ? server.request<CodeLens>("codeLens/resolve", lens)
          : Promise.resolve(lens),
      ),
    );
    const runTest = resolved.find((lens) => lens.command?.command === COMMANDS.runTest);
    assert.ok(runTest?.command !== undefined, `a ${COMMANDS.runTest} lens among ${JSON.stringify(resolved)}`);
    assert.equal(runTest.range.start.line, TEST_LINE);
    assert.deepEqual(runTest.command.arguments, [uri, TEST_NAME]);
  });

  it("shuts down and exits cleanly", async () => {
    const { server } = running();
    await server.notify("textDocument/didClose", { textDocument: { uri } });
    assert.equal(await server.exit(), 0);
  });
});
