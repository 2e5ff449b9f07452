// RUN: tilefuse-opt %s -p fold-asserts --verify-diagnostics | filecheck %s

// A check false on every element (`j + 16 < 8` for j in 0..15) fails every
// run: a compile error at the check, with its message.
// CHECK: fold_asserts_refusals.mlir:[[# @LINE + 10]]:5: error: 'cf.assert' op fails on every element, so on every run: "index must be smaller than dim size" (its condition is always false)
func.func @always_out_of_range(%t: tensor<8xf32>) -> tensor<16xf32> {
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<16xf32>) {
  ^bb0(%o: f32):
    %j = linalg.index 0 : index
    %k = arith.addi %j, %c16 : index
    %lt = arith.cmpi slt, %k, %c8 : index
    cf.assert %lt, "index must be smaller than dim size"
    %x = tensor.extract %t[%c8] : tensor<8xf32>
    linalg.yield %x : f32
  } -> tensor<16xf32>
  func.return %r : tensor<16xf32>
}
