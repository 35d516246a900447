//! `#[repr(C)]` mirrors of the parts of XLA's FFI C API (`xla/ffi/api/c_api.h`, as jaxlib ships
//! it under `jax.ffi.include_dir()`) that the handlers read or write. Hand-written from the
//! header of jaxlib 0.10.2 (API 0.3); `layout()` lists every size and offset used here, and
//! `tests/test_layout.py` compiles a C program against the installed header with gcc and
//! requires the same numbers, so a jaxlib whose header moved a field fails a test instead of
//! reading the wrong memory. C enums are `int` on the targets XLA supports: they are `i32`
//! here (never a Rust enum, which an unknown value would make undefined behaviour).

use std::ffi::{c_char, c_void};

pub const API_MAJOR: i32 = 0;
pub const API_MINOR: i32 = 3;

pub const EXTENSION_METADATA: i32 = 1;
pub const STAGE_EXECUTE: i32 = 3;
pub const ARG_BUFFER: i32 = 1;
pub const RET_BUFFER: i32 = 1;
pub const ATTR_ARRAY: i32 = 1;
pub const ATTR_SCALAR: i32 = 3;
pub const ATTR_STRING: i32 = 4;

pub const ERROR_INVALID_ARGUMENT: i32 = 3;
pub const ERROR_NOT_FOUND: i32 = 5;
pub const ERROR_FAILED_PRECONDITION: i32 = 9;
pub const ERROR_INTERNAL: i32 = 13;

#[repr(C)]
pub struct ExtensionBase {
    pub struct_size: usize,
    pub type_: i32,
    pub next: *mut ExtensionBase,
}

#[repr(C)]
pub struct ApiVersion {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub major_version: i32,
    pub minor_version: i32,
}

/// Opaque.
#[repr(C)]
pub struct Error {
    _private: [u8; 0],
}

#[repr(C)]
pub struct ErrorCreateArgs {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub message: *const c_char,
    pub errc: i32,
}

#[repr(C)]
pub struct Buffer {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub dtype: i32,
    pub data: *mut c_void,
    pub rank: i64,
    pub dims: *mut i64,
}

#[repr(C)]
pub struct ByteSpan {
    pub ptr: *const c_char,
    pub len: usize,
}

#[repr(C)]
pub struct Scalar {
    pub dtype: i32,
    pub value: *mut c_void,
}

#[repr(C)]
pub struct Array {
    pub dtype: i32,
    pub size: usize,
    pub data: *mut c_void,
}

#[repr(C)]
pub struct Args {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub size: i64,
    pub types: *mut i32,
    pub args: *mut *mut c_void,
}

#[repr(C)]
pub struct Rets {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub size: i64,
    pub types: *mut i32,
    pub rets: *mut *mut c_void,
}

#[repr(C)]
pub struct Attrs {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub size: i64,
    pub types: *mut i32,
    pub names: *mut *mut ByteSpan,
    pub attrs: *mut *mut c_void,
}

#[repr(C)]
pub struct CallFrame {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub api: *const Api,
    pub ctx: *mut c_void,
    pub stage: i32,
    pub args: Args,
    pub rets: Rets,
    pub attrs: Attrs,
    pub future: *mut c_void,
}

#[repr(C)]
pub struct TypeId {
    pub type_id: i64,
}

#[repr(C)]
pub struct Metadata {
    pub struct_size: usize,
    pub api_version: ApiVersion,
    pub traits: u32,
    pub state_type_id: TypeId,
}

#[repr(C)]
pub struct MetadataExtension {
    pub extension_base: ExtensionBase,
    pub metadata: *mut Metadata,
}

pub type ErrorCreate = unsafe extern "C" fn(args: *mut ErrorCreateArgs) -> *mut Error;

/// The API table. Only `XLA_FFI_Error_Create` is called; the rest are opaque pointers kept for
/// the layout.
#[repr(C)]
pub struct Api {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub api_version: ApiVersion,
    pub internal_api: *const c_void,
    pub error_create: Option<ErrorCreate>,
    pub error_get_message: *const c_void,
    pub error_destroy: *const c_void,
    pub handler_register: *const c_void,
    pub stream_get: *const c_void,
    pub type_register: *const c_void,
    pub execution_context_get: *const c_void,
    pub state_set: *const c_void,
    pub state_get: *const c_void,
    pub device_memory_allocate: *const c_void,
    pub device_memory_free: *const c_void,
    pub thread_pool_schedule: *const c_void,
    pub thread_pool_num_threads: *const c_void,
    pub future_create: *const c_void,
    pub future_set_available: *const c_void,
    pub future_set_error: *const c_void,
    pub run_id_get: *const c_void,
    pub device_ordinal_get: *const c_void,
}

/// `XLA_FFI_STRUCT_SIZE(T, last)`: the offset of the last field plus its size.
macro_rules! struct_size {
    ($t:ty, $last:ident, $ft:ty) => {
        std::mem::offset_of!($t, $last) + std::mem::size_of::<$ft>()
    };
}

pub const CALL_FRAME_STRUCT_SIZE: usize = struct_size!(CallFrame, attrs, Attrs);
pub const BUFFER_STRUCT_SIZE: usize = struct_size!(Buffer, dims, *mut i64);
pub const METADATA_STRUCT_SIZE: usize = struct_size!(Metadata, traits, u32);
pub const METADATA_EXTENSION_STRUCT_SIZE: usize = struct_size!(MetadataExtension, metadata, *mut Metadata);
pub const API_VERSION_STRUCT_SIZE: usize = struct_size!(ApiVersion, minor_version, i32);
pub const ERROR_CREATE_ARGS_STRUCT_SIZE: usize = struct_size!(ErrorCreateArgs, errc, i32);
pub const ARGS_STRUCT_SIZE: usize = struct_size!(Args, args, *mut *mut c_void);
pub const RETS_STRUCT_SIZE: usize = struct_size!(Rets, rets, *mut *mut c_void);
pub const ATTRS_STRUCT_SIZE: usize = struct_size!(Attrs, attrs, *mut *mut c_void);

/// Every size and offset this module relies on, keyed as the C test prints them
/// (`sizeof(T)`, `offsetof(T, f)`, `T_STRUCT_SIZE`).
pub fn layout() -> Vec<(String, usize)> {
    use std::mem::{offset_of, size_of};
    let mut v: Vec<(String, usize)> = Vec::new();
    macro_rules! fields {
        ($c:literal, $t:ty, [$($f:ident = $cf:literal),*]) => {
            v.push((format!("sizeof({})", $c), size_of::<$t>()));
            $( v.push((format!("offsetof({}, {})", $c, $cf), offset_of!($t, $f))); )*
        };
    }
    fields!("XLA_FFI_Extension_Base", ExtensionBase, [struct_size = "struct_size", type_ = "type", next = "next"]);
    fields!(
        "XLA_FFI_Api_Version",
        ApiVersion,
        [
            struct_size = "struct_size",
            extension_start = "extension_start",
            major_version = "major_version",
            minor_version = "minor_version"
        ]
    );
    fields!(
        "XLA_FFI_Error_Create_Args",
        ErrorCreateArgs,
        [struct_size = "struct_size", extension_start = "extension_start", message = "message", errc = "errc"]
    );
    fields!(
        "XLA_FFI_Buffer",
        Buffer,
        [struct_size = "struct_size", extension_start = "extension_start", dtype = "dtype", data = "data", rank = "rank", dims = "dims"]
    );
    fields!("XLA_FFI_ByteSpan", ByteSpan, [ptr = "ptr", len = "len"]);
    fields!("XLA_FFI_Scalar", Scalar, [dtype = "dtype", value = "value"]);
    fields!("XLA_FFI_Array", Array, [dtype = "dtype", size = "size", data = "data"]);
    fields!(
        "XLA_FFI_Args",
        Args,
        [struct_size = "struct_size", extension_start = "extension_start", size = "size", types = "types", args = "args"]
    );
    fields!(
        "XLA_FFI_Rets",
        Rets,
        [struct_size = "struct_size", extension_start = "extension_start", size = "size", types = "types", rets = "rets"]
    );
    fields!(
        "XLA_FFI_Attrs",
        Attrs,
        [
            struct_size = "struct_size",
            extension_start = "extension_start",
            size = "size",
            types = "types",
            names = "names",
            attrs = "attrs"
        ]
    );
    fields!(
        "XLA_FFI_CallFrame",
        CallFrame,
        [
            struct_size = "struct_size",
            extension_start = "extension_start",
            api = "api",
            ctx = "ctx",
            stage = "stage",
            args = "args",
            rets = "rets",
            attrs = "attrs",
            future = "future"
        ]
    );
    fields!(
        "XLA_FFI_Metadata",
        Metadata,
        [struct_size = "struct_size", api_version = "api_version", traits = "traits", state_type_id = "state_type_id"]
    );
    fields!("XLA_FFI_Metadata_Extension", MetadataExtension, [extension_base = "extension_base", metadata = "metadata"]);
    fields!(
        "XLA_FFI_Api",
        Api,
        [
            struct_size = "struct_size",
            extension_start = "extension_start",
            api_version = "api_version",
            internal_api = "internal_api",
            error_create = "XLA_FFI_Error_Create",
            device_ordinal_get = "XLA_FFI_DeviceOrdinal_Get"
        ]
    );
    for (name, size) in [
        ("XLA_FFI_CallFrame_STRUCT_SIZE", CALL_FRAME_STRUCT_SIZE),
        ("XLA_FFI_Buffer_STRUCT_SIZE", BUFFER_STRUCT_SIZE),
        ("XLA_FFI_Metadata_STRUCT_SIZE", METADATA_STRUCT_SIZE),
        ("XLA_FFI_Metadata_Extension_STRUCT_SIZE", METADATA_EXTENSION_STRUCT_SIZE),
        ("XLA_FFI_Api_Version_STRUCT_SIZE", API_VERSION_STRUCT_SIZE),
        ("XLA_FFI_Error_Create_Args_STRUCT_SIZE", ERROR_CREATE_ARGS_STRUCT_SIZE),
        ("XLA_FFI_Args_STRUCT_SIZE", ARGS_STRUCT_SIZE),
        ("XLA_FFI_Rets_STRUCT_SIZE", RETS_STRUCT_SIZE),
        ("XLA_FFI_Attrs_STRUCT_SIZE", ATTRS_STRUCT_SIZE),
    ] {
        v.push((name.to_string(), size));
    }
    for (name, value) in [
        ("XLA_FFI_API_MAJOR", API_MAJOR as usize),
        ("XLA_FFI_API_MINOR", API_MINOR as usize),
        ("XLA_FFI_Extension_Metadata", EXTENSION_METADATA as usize),
        ("XLA_FFI_ExecutionStage_EXECUTE", STAGE_EXECUTE as usize),
        ("XLA_FFI_ArgType_BUFFER", ARG_BUFFER as usize),
        ("XLA_FFI_RetType_BUFFER", RET_BUFFER as usize),
        ("XLA_FFI_AttrType_ARRAY", ATTR_ARRAY as usize),
        ("XLA_FFI_AttrType_SCALAR", ATTR_SCALAR as usize),
        ("XLA_FFI_AttrType_STRING", ATTR_STRING as usize),
        ("XLA_FFI_Error_Code_INVALID_ARGUMENT", ERROR_INVALID_ARGUMENT as usize),
        ("XLA_FFI_Error_Code_NOT_FOUND", ERROR_NOT_FOUND as usize),
        ("XLA_FFI_Error_Code_FAILED_PRECONDITION", ERROR_FAILED_PRECONDITION as usize),
        ("XLA_FFI_Error_Code_INTERNAL", ERROR_INTERNAL as usize),
    ] {
        v.push((name.to_string(), value));
    }
    for (name, code) in DTYPES {
        v.push((format!("XLA_FFI_DataType_{name}"), *code as usize));
    }
    v
}

/// The XLA element types op-runtime has, by their `XLA_FFI_DataType` name and code.
pub const DTYPES: &[(&str, i32)] = &[
    ("PRED", 1),
    ("S8", 2),
    ("S16", 3),
    ("S32", 4),
    ("S64", 5),
    ("U8", 6),
    ("U16", 7),
    ("U32", 8),
    ("U64", 9),
    ("F16", 10),
    ("F32", 11),
    ("F64", 12),
    ("BF16", 16),
];
