// RUN: tilefuse-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @yield_type_mismatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = tilefuse.group "k" ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %e = tensor.empty() : tensor<8xf32>
    tilefuse.yield %e : tensor<8xf32>
  } -> (tensor<4xf32>)
  func.return %r : tensor<4xf32>
}
// CHECK: tilefuse_verify.mlir:4:3: error: 'tilefuse.group' op The group yields ['tensor<8xf32>'] but declares results ['tensor<4xf32>'].

// -----

func.func @arg_mismatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = tilefuse.group "k" ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<5xf32>):
    tilefuse.yield %x : tensor<4xf32>
  } -> (tensor<4xf32>)
  func.return %r : tensor<4xf32>
}
// CHECK: error: {{.*}}

// -----

func.func @yield_outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  tilefuse.yield %x : tensor<4xf32>
  func.return %x : tensor<4xf32>
}
// CHECK: tilefuse_verify.mlir:{{[0-9]+}}:3: error: 'tilefuse.yield' op {{.*}}
