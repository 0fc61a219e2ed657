/** Finding the `nabla` binary: the setting, then PATH, and the messages when it is missing. */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { findOnPath, nodeEnvironment, resolveServerPath, type ServerPathEnvironment } from "../../src/serverPath";

/** A machine with the given executable files and no others. */
function machine(
  files: string[],
  overrides: Partial<Omit<ServerPathEnvironment, "isExecutableFile">> = {},
): ServerPathEnvironment {
  const executables = new Set(files);
  return {
    platform: "linux",
    env: { PATH: "/usr/local/bin:/usr/bin" },
    homeDir: "/home/ada",
    workspaceFolder: "/work/project",
    isExecutableFile: (file) => executables.has(file),
    ...overrides,
  };
}

describe("resolveServerPath", () => {
  it("uses PATH when the setting is empty", () => {
    const result = resolveServerPath("", machine(["/usr/bin/nabla"]));
    assert.deepEqual(result, { kind: "found", path: "/usr/bin/nabla", source: "PATH" });
  });

  it("takes the first match in PATH order", () => {
    const result = resolveServerPath("", machine(["/usr/local/bin/nabla", "/usr/bin/nabla"]));
    assert.deepEqual(result, { kind: "found", path: "/usr/local/bin/nabla", source: "PATH" });
  });

  it("treats a blank setting as unset", () => {
    const result = resolveServerPath("   ", machine(["/usr/bin/nabla"]));
    assert.equal(result.kind === "found" && result.source, "PATH");
  });

  it("prefers the setting over PATH", () => {
    const result = resolveServerPath("/opt/nabla/bin/nabla", machine(["/opt/nabla/bin/nabla", "/usr/bin/nabla"]));
    assert.deepEqual(result, { kind: "found", path: "/opt/nabla/bin/nabla", source: "setting" });
  });

  it("expands ~ and ${workspaceFolder} in the setting", () => {
    const env = machine(["/home/ada/.cargo/bin/nabla", "/work/project/target/debug/nabla"]);
    assert.deepEqual(resolveServerPath("~/.cargo/bin/nabla", env), {
      kind: "found",
      path: "/home/ada/.cargo/bin/nabla",
      source: "setting",
    });
    assert.deepEqual(resolveServerPath("${workspaceFolder}/target/debug/nabla", env), {
      kind: "found",
      path: "/work/project/target/debug/nabla",
      source: "setting",
    });
  });

  it("resolves a relative setting against the workspace folder", () => {
    const result = resolveServerPath("target/release/nabla", machine(["/work/project/target/release/nabla"]));
    assert.deepEqual(result, { kind: "found", path: "/work/project/target/release/nabla", source: "setting" });
  });

  it("looks a bare command name in the setting up on PATH", () => {
    const result = resolveServerPath("nabla-nightly", machine(["/usr/bin/nabla-nightly", "/usr/bin/nabla"]));
    assert.deepEqual(result, { kind: "found", path: "/usr/bin/nabla-nightly", source: "setting" });
  });

  it("keeps spaces in paths", () => {
    const file = "/home/ada/My Tools/nabla";
    const result = resolveServerPath(file, machine([file]));
    assert.deepEqual(result, { kind: "found", path: file, source: "setting" });
  });

  it("says how to install or configure when nabla is not on PATH", () => {
    const result = resolveServerPath("", machine([]));
    assert.equal(result.kind, "missing");
    assert.ok(result.kind === "missing");
    assert.match(result.message, /could not find `nabla` on PATH/);
    assert.match(result.message, /cargo install --path crates\/cli/);
    assert.match(result.message, /nabla\.server\.path/);
  });

  it("does not fall back to PATH when the setting points nowhere", () => {
    const result = resolveServerPath("/opt/missing/nabla", machine(["/usr/bin/nabla"]));
    assert.ok(result.kind === "missing");
    assert.match(result.message, /`nabla\.server\.path` is "\/opt\/missing\/nabla", but there is no executable file there/);
    assert.match(result.message, /clear the setting/);
  });

  it("shows both the setting and the resolved path when they differ", () => {
    const result = resolveServerPath("~/bin/nabla", machine([]));
    assert.ok(result.kind === "missing");
    assert.match(result.message, /"~\/bin\/nabla" \(\/home\/ada\/bin\/nabla\)/);
  });

  it("reports a bare command name that is not on PATH", () => {
    const result = resolveServerPath("nabla-nightly", machine(["/usr/bin/nabla"]));
    assert.ok(result.kind === "missing");
    assert.match(result.message, /no such command is on PATH/);
  });
});

describe("findOnPath", () => {
  it("skips empty PATH entries instead of searching the current directory", () => {
    const env = machine(["nabla"], { env: { PATH: ":/usr/bin:" } });
    assert.equal(findOnPath("nabla", env), undefined);
  });

  it("finds nabla.exe through a case-insensitive Path on Windows", () => {
    const env = machine(["C:\\Users\\Ada\\.cargo\\bin\\nabla.exe"], {
      platform: "win32",
      env: { Path: "C:\\Windows\\System32;\"C:\\Users\\Ada\\.cargo\\bin\"" },
      homeDir: "C:\\Users\\Ada",
      workspaceFolder: "C:\\work",
    });
    assert.equal(findOnPath("nabla", env), "C:\\Users\\Ada\\.cargo\\bin\\nabla.exe");
  });

  it("resolves Windows settings with backslashes, ~ and relative paths", () => {
    const env = machine(["C:\\Users\\Ada\\bin\\nabla.exe", "C:\\work\\target\\debug\\nabla.exe"], {
      platform: "win32",
      env: {},
      homeDir: "C:\\Users\\Ada",
      workspaceFolder: "C:\\work",
    });
    assert.deepEqual(resolveServerPath("~\\bin\\nabla.exe", env), {
      kind: "found",
      path: "C:\\Users\\Ada\\bin\\nabla.exe",
      source: "setting",
    });
    assert.deepEqual(resolveServerPath("target\\debug\\nabla.exe", env), {
      kind: "found",
      path: "C:\\work\\target\\debug\\nabla.exe",
      source: "setting",
    });
  });
});

describe("nodeEnvironment", () => {
  it("accepts executable files and rejects directories and plain files", { skip: process.platform === "win32" }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nabla-path-"));
    try {
      const executable = path.join(dir, "nabla");
      const plain = path.join(dir, "notes.txt");
      fs.writeFileSync(executable, "#!/bin/sh\n");
      fs.chmodSync(executable, 0o755);
      fs.writeFileSync(plain, "");
      fs.chmodSync(plain, 0o644);
      const env = nodeEnvironment(undefined);
      assert.equal(env.isExecutableFile(executable), true);
      assert.equal(env.isExecutableFile(plain), false);
      assert.equal(env.isExecutableFile(dir), false);
      assert.equal(env.isExecutableFile(path.join(dir, "absent")), false);
      assert.equal(findOnPath("nabla", { ...env, env: { PATH: `/nonexistent:${dir}` } }), executable);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
