func.func @f(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %r = linalg.exp ins(%x : tensor<?x16xf32>) outs(%x : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}
