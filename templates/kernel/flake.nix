{
  description = "my-kernel: a PyTorch kernel built with kernel-builder";

  # The kernel-builder flake this project was created from (`nix flake init -t <it>#kernel`): put the same
  # reference here, e.g. a path or a git URL of your copy of kernel-builder.
  inputs.kernel-builder.url = "path:/path/to/kernel-builder";

  outputs =
    { self, kernel-builder }:
    # packages.<system>: one derivation per variant (`nix build .#torch213-cxx11-cpu-x86_64-linux`) and
    # `bundle` (the default), every variant this nixpkgs can build as one build/ tree; checks: the tests in
    # tests/ against each cpu variant; devShells.default: Python with torch, kernel-builder, CMake and Ninja.
    kernel-builder.lib.genKernelFlakeOutputs {
      inherit self;
      path = ./.;
    };
}
