func.func @f(%a: memref<4xf32>) -> memref<4xf32> {
  func.return %a : memref<4xf32>
}
