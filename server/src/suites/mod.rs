//! Suites: the definitions in `suites/*.toml`, checked and copied into the store at start-up.

pub mod cluster;
pub mod definition;
pub mod warp;

pub use definition::SuiteDefinition;

use std::path::{Path, PathBuf};
use store::Store;

/// One suite file, read and checked.
#[derive(Debug, Clone)]
pub struct LoadedSuite {
    pub path: PathBuf,
    pub definition: SuiteDefinition,
}

fn is_url(repository: &str) -> bool {
    repository.contains("://") || repository.starts_with("git@")
}

/// Reads every `*.toml` in `dir` (none when the folder does not exist). One bad file fails the whole
/// load with the file and its problem named: a server must not start with half its suites.
pub fn load_dir(dir: &Path) -> Result<Vec<LoadedSuite>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read the suites folder {}: {e}", dir.display())),
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    let mut suites: Vec<LoadedSuite> = Vec::new();
    for path in paths {
        let text = crate::read_input(&path)?;
        let mut definition = SuiteDefinition::from_toml(&text).map_err(|e| format!("suite file {}: {e}", path.display()))?;
        if let Some(first) = suites.iter().find(|s| s.definition.name == definition.name) {
            return Err(format!("suite {:?} is defined twice: {} and {}", definition.name, first.path.display(), path.display()));
        }
        // A local repository is relative to the suite file's folder.
        if !is_url(&definition.repository) && Path::new(&definition.repository).is_relative() {
            let base = path.parent().unwrap_or(Path::new("."));
            definition.repository = base.join(&definition.repository).to_string_lossy().into_owned();
        }
        // So are a warp suite's prebuilt binaries and credentials file.
        if let Some(warp) = definition.warp.as_mut() {
            let base = path.parent().unwrap_or(Path::new("."));
            let absolute = |p: &mut String| {
                if Path::new(p.as_str()).is_relative() {
                    *p = base.join(p.as_str()).to_string_lossy().into_owned();
                }
            };
            warp.binaries.values_mut().for_each(absolute);
            warp.credentials_file.iter_mut().for_each(absolute);
            warp.warp_bin.iter_mut().filter(|p| p.contains('/')).for_each(absolute);
        }
        suites.push(LoadedSuite { path, definition });
    }
    Ok(suites)
}

/// Copies the loaded suites into the store (creating or replacing each by name).
pub async fn sync(store: &Store, suites: &[LoadedSuite]) -> Result<(), String> {
    for s in suites {
        let json = serde_json::to_value(&s.definition).map_err(|e| e.to_string())?;
        store
            .upsert_suite(&s.definition.name, s.definition.kind, &json, &format!("file:{}", s.path.display()))
            .await
            .map_err(|e| format!("cannot store suite {:?}: {e}", s.definition.name))?;
    }
    Ok(())
}
