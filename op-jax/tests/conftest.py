import jax

# f64 inputs are part of every op's contract; JAX needs x64 to pass them.
jax.config.update("jax_enable_x64", True)
