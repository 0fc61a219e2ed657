//! `nabla lsp` driven by a real Neovim, headless, through the set-up that
//! `docs/language-server.md` gives for its version: open a file, edit it with normal-mode
//! commands, format twice at once, and check the buffer's text and diagnostics.
//!
//! The Neovim is `$NABLA_NVIM`, or `nvim` on the `PATH` (`cargo xtask test` installs Debian's
//! `neovim` package when it can). Without one the test says so on stderr and passes, unless
//! `NABLA_REQUIRE_NVIM=1`, which `cargo xtask test` sets when it has one.

mod lsp_support;

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use lsp_support::{nabla_fmt, workspace};

/// The file before the edits.
const BEFORE: &str = "function float scale(float x, float k) {
    return x*k;
}
float y = scale(nope, 2.0);
print(y);
";

/// What the edits of [`DRIVE`] type into [`BEFORE`]: a comment on a new first line, `nope`
/// replaced, and a statement appended whose `z` is unknown.
const TYPED: &str = "// note
function float scale(float x, float k) {
    return x*k;
}
float y = scale(1.0, 2.0);
print(y);
print(z*2.0);
";

/// The Lua script Neovim runs once the file is open. Each step waits only for what an editor's
/// user would see; the two formatting requests follow the typing and each other at once.
const DRIVE: &str = r#"
local function clients()
  if vim.lsp.get_clients then return vim.lsp.get_clients({ bufnr = 0 }) end
  return vim.lsp.buf_get_clients(0)
end
local function format()
  if vim.fn.has("nvim-0.8") == 1 then
    vim.lsp.buf.format({ timeout_ms = 10000 })
  else
    vim.lsp.buf.formatting_sync(nil, 10000)
  end
end
local out = { filetype = vim.bo.filetype }
out.attached = vim.wait(20000, function() return #vim.tbl_keys(clients()) > 0 end, 10)
out.first_diagnostics = vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 10)
vim.cmd("normal! ggO// note")
vim.fn.search("nope")
vim.cmd("normal! ciw1.0")
vim.cmd("normal! Goprint(z*2.0);")
format()
format()
out.settled = vim.wait(20000, function()
  local d = vim.diagnostic.get(0)
  return #d == 1 and d[1].lnum == 6
end, 10)
out.lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
out.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out.diagnostics, { d.lnum, d.col, d.end_lnum, d.end_col, d.code, d.message })
end
local file = io.open("result.json", "w")
file:write(vim.fn.json_encode(out))
file:close()
vim.cmd("qa!")
"#;

/// The Neovim to drive, if there is one.
fn nvim() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NABLA_NVIM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("nvim")).find(|candidate| candidate.is_file())
}

/// Neovim's version, as `(major, minor)`.
fn version(nvim: &Path) -> (u32, u32) {
    let output = Command::new(nvim)
        .arg("--version")
        .output()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", nvim.display()));
    let text = String::from_utf8_lossy(&output.stdout);
    let number = text.lines().next().and_then(|l| l.strip_prefix("NVIM v")).unwrap_or("");
    let mut parts = number.split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The Lua code block after the heading `heading` of the language server's page.
fn documented_setup(heading: &str) -> String {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/language-server.md");
    let text = std::fs::read_to_string(&page).unwrap_or_else(|err| panic!("{err}"));
    let section = text
        .split("\n### ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("no section {heading:?} in {}", page.display()));
    let block = section
        .split_once("```lua\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .unwrap_or_else(|| panic!("no Lua block in the section {heading:?}"));
    block.0.to_owned()
}

#[test]
fn neovim_edits_and_formats_through_the_documented_setup() {
    let Some(nvim) = nvim() else {
        assert!(
            std::env::var_os("NABLA_REQUIRE_NVIM").is_none_or(|v| v != "1"),
            "NABLA_REQUIRE_NVIM=1 but there is no nvim on the PATH"
        );
        eprintln!("skipped: no Neovim (set NABLA_NVIM or put nvim on the PATH)");
        return;
    };
    let version = version(&nvim);
    let heading = if version >= (0, 10) { "Neovim 0.10 or later" } else { "Neovim 0.7 to 0.9" };
    let setup = documented_setup(heading);
    let dir =
        workspace("neovim", &[("init.lua", &setup), ("drive.lua", DRIVE), ("main.nb", BEFORE)]);
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap_or_else(|err| panic!("{err}"));

    // `nabla` on the PATH, as the set-up expects; Neovim's own files in a fresh home.
    let bin = Path::new(env!("CARGO_BIN_EXE_nabla")).parent().map(Path::to_path_buf);
    let path = std::env::join_paths(
        bin.into_iter().chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap_or_else(|err| panic!("{err}"));
    let mut child = Command::new(&nvim)
        .args(["--headless", "-u", "init.lua", "-i", "NONE", "-c", "luafile drive.lua", "main.nb"])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot start {}: {err}", nvim.display()));
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let _ = child.wait();
    let result = std::fs::read_to_string(dir.path().join("result.json")).unwrap_or_else(|err| {
        panic!("Neovim {version:?} wrote no result ({err}); its stderr:\n{stderr}")
    });
    let result: Value = serde_json::from_str(&result).unwrap_or_else(|err| panic!("{err}"));
    let context = format!("Neovim {version:?}, set-up {heading:?}: {result}\nstderr:\n{stderr}");

    assert_eq!(result["filetype"], "nabla", "{context}");
    assert_eq!(result["attached"], true, "{context}");
    assert_eq!(result["first_diagnostics"], true, "{context}");
    let lines: Vec<&str> = result["lines"]
        .as_array()
        .map(|lines| lines.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let text = format!("{}\n", lines.join("\n"));
    assert_eq!(text, nabla_fmt(TYPED), "{context}");
    assert_eq!(result["settled"], true, "{context}");
    assert_eq!(
        result["diagnostics"],
        serde_json::json!([[6, 6, 6, 7, "E0100", "cannot find `z` in this scope"]]),
        "{context}"
    );
}
