{
  description = "kernel-builder: build, publish and load PyTorch compute kernels";

  # The variant matrix is shared with the Python tool: the flake reads the same file.
  outputs = { self }: {
    lib.buildMatrix = (builtins.fromJSON (builtins.readFile ./kernel_builder/build-matrix.json)).entries;
  };
}
