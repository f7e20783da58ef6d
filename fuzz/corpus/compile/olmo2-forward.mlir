module {
  func.func @llama(%arg0: tensor<2x2xi32> {mt.input = "tokens"}, %arg1: tensor<2x2xi32> {mt.input = "labels"}, %arg2: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "vocab"}, mt.param = "model.embed_tokens.weight"}, %arg3: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.q_proj.weight"}, %arg4: tensor<2x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.k_proj.weight"}, %arg5: tensor<2x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.v_proj.weight"}, %arg6: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.self_attn.o_proj.weight"}, %arg7: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.self_attn.q_norm.weight"}, %arg8: tensor<2xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.self_attn.k_norm.weight"}, %arg9: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.gate_proj.weight"}, %arg10: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.up_proj.weight"}, %arg11: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.mlp.down_proj.weight"}, %arg12: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.post_attention_layernorm.weight"}, %arg13: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.post_feedforward_layernorm.weight"}, %arg14: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.q_proj.weight"}, %arg15: tensor<2x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.k_proj.weight"}, %arg16: tensor<2x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.v_proj.weight"}, %arg17: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.1.self_attn.o_proj.weight"}, %arg18: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.self_attn.q_norm.weight"}, %arg19: tensor<2xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.self_attn.k_norm.weight"}, %arg20: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.mlp.gate_proj.weight"}, %arg21: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.mlp.up_proj.weight"}, %arg22: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.1.mlp.down_proj.weight"}, %arg23: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.post_attention_layernorm.weight"}, %arg24: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.post_feedforward_layernorm.weight"}, %arg25: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.norm.weight"}) -> (tensor<f32> {mt.output = "loss"}) {
    %0 = mt.embedding %arg2, %arg0 : (tensor<8x4xf32>, tensor<2x2xi32>) -> tensor<2x2x4xf32>
    %1 = mt.matmul %0, %arg3 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %2 = mt.rms_norm %1, %arg7 {epsilon = 1.000000e-05 : f64, mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %3 = mt.split_heads %2 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %4 = mt.rope %3 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32>
    %5 = mt.matmul %0, %arg4 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %6 = mt.rms_norm %5, %arg8 {epsilon = 1.000000e-05 : f64, mt.layer = 0 : i64} : tensor<2x2x2xf32>, tensor<2xf32>
    %7 = mt.split_heads %6 {mt.layer = 0 : i64} : tensor<2x2x2xf32> -> tensor<2x1x2x2xf32>
    %8 = mt.rope %7 {mt.layer = 0 : i64} : tensor<2x1x2x2xf32>
    %9 = mt.matmul %0, %arg5 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %10 = mt.split_heads %9 {mt.layer = 0 : i64} : tensor<2x2x2xf32> -> tensor<2x1x2x2xf32>
    %11 = mt.repeat_kv %8 {groups = 2 : i64, mt.layer = 0 : i64} : tensor<2x1x2x2xf32> -> tensor<2x2x2x2xf32>
    %12 = mt.repeat_kv %10 {groups = 2 : i64, mt.layer = 0 : i64} : tensor<2x1x2x2xf32> -> tensor<2x2x2x2xf32>
    %13 = mt.attention %4, %11, %12 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32>
    %14 = mt.merge_heads %13 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %15 = mt.matmul %14, %arg6 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %16 = mt.rms_norm %15, %arg12 {epsilon = 1.000000e-05 : f64, mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %17 = mt.add %0, %16 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %18 = mt.matmul %17, %arg9 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %19 = mt.matmul %17, %arg10 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %20 = mt.silu %18 {mt.layer = 0 : i64} : tensor<2x2x8xf32>
    %21 = mt.mul %20, %19 {mt.layer = 0 : i64} : tensor<2x2x8xf32>
    %22 = mt.matmul %21, %arg11 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %23 = mt.rms_norm %22, %arg13 {epsilon = 1.000000e-05 : f64, mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %24 = mt.add %17, %23 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %25 = mt.matmul %24, %arg14 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %26 = mt.rms_norm %25, %arg18 {epsilon = 1.000000e-05 : f64, mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %27 = mt.split_heads %26 {mt.layer = 1 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %28 = mt.rope %27 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32>
    %29 = mt.matmul %24, %arg15 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %30 = mt.rms_norm %29, %arg19 {epsilon = 1.000000e-05 : f64, mt.layer = 1 : i64} : tensor<2x2x2xf32>, tensor<2xf32>
    %31 = mt.split_heads %30 {mt.layer = 1 : i64} : tensor<2x2x2xf32> -> tensor<2x1x2x2xf32>
    %32 = mt.rope %31 {mt.layer = 1 : i64} : tensor<2x1x2x2xf32>
    %33 = mt.matmul %24, %arg16 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %34 = mt.split_heads %33 {mt.layer = 1 : i64} : tensor<2x2x2xf32> -> tensor<2x1x2x2xf32>
    %35 = mt.repeat_kv %32 {groups = 2 : i64, mt.layer = 1 : i64} : tensor<2x1x2x2xf32> -> tensor<2x2x2x2xf32>
    %36 = mt.repeat_kv %34 {groups = 2 : i64, mt.layer = 1 : i64} : tensor<2x1x2x2xf32> -> tensor<2x2x2x2xf32>
    %37 = mt.attention %28, %35, %36 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32>
    %38 = mt.merge_heads %37 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %39 = mt.matmul %38, %arg17 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %40 = mt.rms_norm %39, %arg23 {epsilon = 1.000000e-05 : f64, mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %41 = mt.add %24, %40 {mt.layer = 1 : i64} : tensor<2x2x4xf32>
    %42 = mt.matmul %41, %arg20 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %43 = mt.matmul %41, %arg21 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %44 = mt.silu %42 {mt.layer = 1 : i64} : tensor<2x2x8xf32>
    %45 = mt.mul %44, %43 {mt.layer = 1 : i64} : tensor<2x2x8xf32>
    %46 = mt.matmul %45, %arg22 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %47 = mt.rms_norm %46, %arg24 {epsilon = 1.000000e-05 : f64, mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %48 = mt.add %41, %47 {mt.layer = 1 : i64} : tensor<2x2x4xf32>
    %49 = mt.rms_norm %48, %arg25 {epsilon = 1.000000e-05 : f64} : tensor<2x2x4xf32>, tensor<4xf32>
    %50 = mt.matmul %49, %arg2 transpose_b : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %51 = mt.cross_entropy %50, %arg1 : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> tensor<f32>
    return %51 : tensor<f32>
  }
}
