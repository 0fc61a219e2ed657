//! The reference side: a Python virtual environment in `target/bench-venv` with the tools pinned
//! in `bench/requirements.txt`, installed once from PyPI, and the group scripts run in it.
//!
//! A script prints one JSON object a line, `{"key": ..., "seconds": ..., "note": ...}`; its
//! standard error (progress) goes straight to the terminal.

use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use super::json::{self, Value};

const VENV: &str = "target/bench-venv";
const REQUIREMENTS: &str = "bench/requirements.txt";
/// Written after a successful install; holds the requirements it installed, so editing the pins
/// reinstalls.
const MARKER: &str = "installed-requirements.txt";

/// One figure a reference script printed: a median time, or why there is none.
#[derive(Debug, Clone)]
pub struct Figure {
    pub seconds: Option<f64>,
    pub note: Option<String>,
}

pub struct Python {
    interpreter: PathBuf,
}

impl Python {
    /// The environment's interpreter, creating the environment and installing the pinned tools
    /// first when that has not been done for the current `bench/requirements.txt`.
    pub fn ensure(root: &Path) -> Result<Python, String> {
        let venv = root.join(VENV);
        let interpreter = venv.join("bin/python");
        let requirements = root.join(REQUIREMENTS);
        let wanted = fs::read_to_string(&requirements)
            .map_err(|err| format!("cannot read {}: {err}", requirements.display()))?;
        let marker = venv.join(MARKER);
        if fs::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) {
            return Ok(Python { interpreter });
        }
        if !interpreter.exists() {
            eprintln!("==> creating the reference environment {VENV} (python3 -m venv)");
            crate::run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        }
        let pins: Vec<&str> = wanted
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .collect();
        eprintln!(
            "==> installing into {VENV} from PyPI: {} (torch brings its CUDA libraries: about \
             6 GB, once)",
            pins.join(" ")
        );
        crate::run(
            Command::new(&interpreter)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--progress-bar",
                    "off",
                    "--disable-pip-version-check",
                ])
                .arg("-r")
                .arg(&requirements),
        )?;
        fs::write(&marker, &wanted)
            .map_err(|err| format!("cannot write {}: {err}", marker.display()))?;
        Ok(Python { interpreter })
    }

    /// The environment's `python`.
    pub fn interpreter(&self) -> &Path {
        &self.interpreter
    }

    /// Runs `bench/<script>` and collects its figures by key.
    pub fn figures(
        &self,
        root: &Path,
        script: &str,
        env: &[(String, String)],
    ) -> Result<HashMap<String, Figure>, String> {
        let mut figures = HashMap::new();
        for line in self.run(root, script, env)?.lines().filter(|line| line.starts_with('{')) {
            let value = json::parse(line).map_err(|err| format!("{script}: {err} in {line}"))?;
            let Some(key) = value.get("key").and_then(Value::as_str) else { continue };
            let figure = Figure {
                seconds: value.get("seconds").and_then(Value::as_f64),
                note: value.get("note").and_then(Value::as_str).map(str::to_owned),
            };
            figures.insert(key.to_owned(), figure);
        }
        Ok(figures)
    }

    /// Versions and thread settings of the reference tools, as printed by `bench/timing.py`.
    pub fn environment(
        &self,
        root: &Path,
        env: &[(String, String)],
    ) -> Result<Vec<(String, String)>, String> {
        let output = self.run(root, "timing.py", env)?;
        let value = json::parse(output.trim()).map_err(|err| format!("timing.py: {err}"))?;
        match value.get("environment") {
            Some(Value::Object(members)) => {
                Ok(members.iter().map(|(k, v)| (k.clone(), v.to_text())).collect())
            }
            _ => Err("timing.py printed no environment".to_owned()),
        }
    }

    fn run(&self, root: &Path, script: &str, env: &[(String, String)]) -> Result<String, String> {
        let dir = root.join("bench");
        let output = Command::new(&self.interpreter)
            .arg(script)
            .current_dir(&dir)
            .envs(env.iter().map(|(k, v)| (k, v)))
            // No `__pycache__` beside the scripts in the source tree.
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stderr(Stdio::inherit())
            .output()
            .map_err(|err| format!("cannot run {}: {err}", self.interpreter.display()))?;
        if !output.status.success() {
            return Err(format!("bench/{script} failed with {}", output.status));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}
