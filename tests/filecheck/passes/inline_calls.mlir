// RUN: tilefuse-opt %s -p inline-calls | filecheck %s

// A private helper called twice (once from another helper) is inlined at each
// call, with its arguments substituted; the helpers, now unused, are dropped.
// CHECK-NOT:   @scale
// CHECK-NOT:   @twice
// CHECK-LABEL: func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>)
// CHECK-NOT:     func.call
// CHECK:         %[[A:.*]] = linalg.mul ins(%x, %y : {{.*}})
// CHECK:         %[[B:.*]] = linalg.mul ins(%[[A]], %y : {{.*}})
// CHECK:         %[[C:.*]] = linalg.exp ins(%[[B]] : {{.*}})
// CHECK:         func.return %[[C]]
// CHECK-NOT:   @scale
func.func private @scale(%a: tensor<8xf32>, %s: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.mul ins(%a, %s : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
func.func private @twice(%a: tensor<8xf32>, %s: tensor<8xf32>) -> tensor<8xf32> {
  %p = func.call @scale(%a, %s) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %q = func.call @scale(%p, %s) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %q : tensor<8xf32>
}
func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %t = func.call @twice(%x, %y) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.exp ins(%t : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
