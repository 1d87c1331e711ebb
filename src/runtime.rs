//! The addon's JavaScript half (src/runtime.js): evaluated once per thread's
//! environment and called from Rust for the codec and the dispatcher.

use std::cell::RefCell;

use napi::{
  bindgen_prelude::{Buffer, FnArgs, Function, JsObjectValue, Object, ObjectRef},
  Env, Unknown,
};
use serde_json::Value;

use crate::error::{BpfError, BpfResult, Code};
use crate::tsfn::DispatchArgs;

const SOURCE: &str = include_str!("runtime.js");

thread_local! {
  static RUNTIME: RefCell<Option<ObjectRef<false>>> = const { RefCell::new(None) };
}

/// How typed values are decoded.
#[napi_derive::napi(object)]
#[derive(Default, Clone)]
pub struct DecodeOptions {
  /// 64-bit integers and pointers as `'bigint'` (default, exact) or
  /// `'number'` (loses precision above 2^53).
  #[napi(ts_type = "'bigint' | 'number'")]
  pub int64: Option<String>,
  /// Enums as the enumerator's `'name'` (default; a value without a name
  /// stays a number) or as the `'number'`.
  #[napi(ts_type = "'name' | 'number'")]
  pub enums: Option<String>,
}

impl DecodeOptions {
  pub fn check(&self) -> BpfResult<()> {
    let bad = |what: &str, v: &str, allowed: &str| {
      Err(BpfError::new(Code::InvalidValue, format!("option {what}: '{v}' is not one of {allowed}")))
    };
    match self.int64.as_deref() {
      None | Some("bigint") | Some("number") => {}
      Some(v) => return bad("int64", v, "'bigint', 'number'"),
    }
    match self.enums.as_deref() {
      None | Some("name") | Some("number") => Ok(()),
      Some(v) => bad("enums", v, "'name', 'number'"),
    }
  }

  fn to_json(&self) -> String {
    serde_json::json!({"int64": self.int64, "enums": self.enums}).to_string()
  }
}

/// The runtime object of this thread's environment.
fn runtime(env: &Env) -> napi::Result<Object<'_>> {
  RUNTIME.with(|cell| {
    let mut cell = cell.borrow_mut();
    if cell.is_none() {
      let make: Function<'_, (), Object<'_>> = env.run_script(SOURCE)?;
      let runtime = make.call(())?;
      *cell = Some(runtime.create_ref::<false>()?);
    }
    cell.as_ref().unwrap().get_value(env)
  })
}

fn method<'e, Args: napi::bindgen_prelude::JsValuesTupleIntoVec, Ret: napi::bindgen_prelude::FromNapiValue>(
  env: &'e Env,
  name: &str,
) -> napi::Result<Function<'e, Args, Ret>> {
  runtime(env)?.get_named_property(name)
}

/// A layout registered with the codec, by id.
#[derive(Clone, Copy, Debug)]
pub struct TypeId(pub i32);

/// Registers `layout` with decode `options`; the id names it in later calls.
pub fn register(env: &Env, layout: &Value, options: &DecodeOptions) -> BpfResult<TypeId> {
  let f = method::<FnArgs<(String, String)>, i32>(env, "register")?;
  Ok(TypeId(f.call((layout.to_string(), options.to_json()).into())?))
}

/// Decodes a value of a registered type.
pub fn decode<'e>(env: &'e Env, ty: TypeId, bytes: Vec<u8>) -> BpfResult<Unknown<'e>> {
  let f = method::<FnArgs<(i32, Buffer)>, Unknown<'e>>(env, "decode")?;
  Ok(f.call((ty.0, Buffer::from(bytes)).into())?)
}

/// Encodes a JavaScript value as a registered type; `what` names it in errors.
pub fn encode(env: &Env, ty: TypeId, value: Unknown<'_>, what: &str) -> BpfResult<Vec<u8>> {
  let f = method::<FnArgs<(i32, Unknown<'_>, String)>, napi::Either<Buffer, String>>(env, "encode")?;
  match f.call((ty.0, value, what.to_string()).into())? {
    napi::Either::A(bytes) => Ok(bytes.to_vec()),
    napi::Either::B(why) => Err(BpfError::new(Code::InvalidValue, why)),
  }
}

/// What the dispatcher of a buffer calls.
pub struct DispatchTo<'a> {
  pub callback: Unknown<'a>,
  pub lost: Option<Unknown<'a>>,
  pub on_error: Option<Unknown<'a>>,
  pub per_cpu: bool,
  pub ty: Option<TypeId>,
  /// One call per batch: `(data, ends[, cpus])`.
  pub batch: bool,
}

/// A dispatcher for a buffer's batches (see runtime.js).
pub fn dispatcher<'e>(env: &'e Env, to: DispatchTo<'e>) -> BpfResult<Function<'e, DispatchArgs, u32>> {
  type Args<'a> = FnArgs<(Unknown<'a>, Option<Unknown<'a>>, bool, i32, Option<Unknown<'a>>, bool)>;
  let f = method::<Args<'e>, Function<'e, DispatchArgs, u32>>(env, "dispatcher")?;
  let ty = to.ty.map_or(-1, |t| t.0);
  Ok(f.call((to.callback, to.lost, to.per_cpu, ty, to.on_error, to.batch).into())?)
}

/// `iterable[Symbol.iterator]()`.
pub fn iterator<'e>(env: &'e Env, iterable: Unknown<'e>) -> BpfResult<Unknown<'e>> {
  let f = method::<Unknown<'e>, Unknown<'e>>(env, "iterator")?;
  Ok(f.call(iterable)?)
}
