//! `flameGraph`: an SVG flame graph of folded stacks (inferno).

use napi_derive::napi;

use crate::error::{guard, BpfError, Code, Result};

/// Options of `flameGraph`.
#[napi(object)]
#[derive(Default)]
pub struct FlameGraphOptions {
  pub title: Option<String>,
  /// What the counts are (default `samples`).
  pub count_name: Option<String>,
}

/// A flame graph (SVG) of folded stacks: one `frame;frame;frame count` per
/// line, root first, as `stackcount --folded` prints them (inferno).
#[napi]
pub fn flame_graph(folded: String, options: Option<FlameGraphOptions>) -> Result<String> {
  guard(|| {
    let options = options.unwrap_or_default();
    let mut opts = inferno::flamegraph::Options::default();
    if let Some(title) = options.title {
      opts.title = title;
    }
    if let Some(count_name) = options.count_name {
      opts.count_name = count_name;
    }
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut svg).map_err(|e| {
      BpfError::new(Code::InvalidValue, format!("making the flame graph: {e} (give folded stacks: 'a;b;c 12' per line)"))
    })?;
    Ok(String::from_utf8_lossy(&svg).into_owned())
  })
}
