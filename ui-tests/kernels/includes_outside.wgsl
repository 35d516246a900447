// Includes a file outside the ui-tests crate (the workspace's own kernels directory).
// @include "../../kernels/clamp_zero_sign.wgsl"
