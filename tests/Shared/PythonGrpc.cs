using System.Diagnostics;
using System.Text.Json;

namespace Hyder.Testing;

/// <summary>
/// Debian's grpcio (python3-grpcio, python3-protobuf, protobuf-compiler; <c>tools/test.sh</c>
/// installs them). Finding them missing fails each interop test with one line that says what to
/// install (<see cref="MissingPackageException"/>): they never pass without running.
/// </summary>
internal sealed class PythonGrpc : IDisposable
{
    private static readonly TimeSpan s_toolTimeout = TimeSpan.FromSeconds(30);

    private PythonGrpc(string interpreter, string pb2Directory)
    {
        Interpreter = interpreter;
        Pb2Directory = pb2Directory;
    }

    /// <summary>Debian's python3 (where python3-grpcio installs), not whatever python3 is first on PATH; HYDER_PYTHON overrides.</summary>
    public string Interpreter { get; }

    /// <summary>Where the proto's *_pb2.py was generated.</summary>
    public string Pb2Directory { get; }

    public static string ScriptPath(string name) => Path.Combine(AppContext.BaseDirectory, "Interop", name);

    /// <summary>
    /// Checks python3, grpc and protoc, and compiles <paramref name="protoFile"/> (in the test's
    /// Protos folder) for Python. Shared by the interop tests of the Hyder API and the server host.
    /// </summary>
    public static PythonGrpc Prepare(string protoFile)
    {
        var interpreter = Environment.GetEnvironmentVariable("HYDER_PYTHON") is { Length: > 0 } custom ? custom : "/usr/bin/python3";
        const string packages = "python3 python3-grpcio python3-protobuf protobuf-compiler";
        if (!File.Exists(interpreter))
        {
            throw MissingPackageException.For($"{interpreter} (for the gRPC interop tests; HYDER_PYTHON names another) is missing", packages);
        }

        var (code, output) = Run(interpreter, ["-c", "import grpc, google.protobuf; print(grpc.__version__)"]);
        if (code != 0)
        {
            throw MissingPackageException.For($"{interpreter} cannot import grpc and google.protobuf (for the gRPC interop tests)", packages);
        }

        MissingPackageException.ThrowIfNotFound("protoc", "protobuf-compiler");
        var directory = Path.Combine(Path.GetTempPath(), $"hyder-py-{Path.GetFileNameWithoutExtension(protoFile)}-{Environment.ProcessId}-{Guid.NewGuid():N}");
        Directory.CreateDirectory(directory);
        var protoDirectory = Path.Combine(AppContext.BaseDirectory, "Protos");
        (code, output) = Run("protoc", [$"--proto_path={protoDirectory}", $"--python_out={directory}", Path.Combine(protoDirectory, protoFile)]);
        if (code != 0)
        {
            Directory.Delete(directory, recursive: true);
            throw new InvalidOperationException($"protoc failed: {output.Trim()}");
        }

        return new PythonGrpc(interpreter, directory);
    }

    /// <summary>Starts a Python script with the generated messages' directory as its first argument.</summary>
    public Process Start(string script, params string[] arguments)
    {
        var info = new ProcessStartInfo(Interpreter)
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        info.ArgumentList.Add(ScriptPath(script));
        info.ArgumentList.Add(Pb2Directory);
        foreach (var a in arguments)
        {
            info.ArgumentList.Add(a);
        }

        return Process.Start(info) ?? throw new InvalidOperationException($"Could not start {Interpreter} {script}.");
    }

    /// <summary>
    /// Runs a client script against <paramref name="port"/> and returns the JSON report it prints;
    /// throws with its stderr (and <paramref name="context"/>) when it fails or overruns
    /// <paramref name="timeout"/>.
    /// </summary>
    public Task<JsonElement> RunClientAsync(string script, int port, TimeSpan timeout, Func<string>? context = null) =>
        RunClientAsync(script, [port.ToString(System.Globalization.CultureInfo.InvariantCulture)], timeout, context);

    /// <summary>Runs a client script with these arguments (after the generated messages' directory) and returns its JSON report.</summary>
    public async Task<JsonElement> RunClientAsync(string script, string[] arguments, TimeSpan timeout, Func<string>? context = null)
    {
        using var process = Start(script, arguments);
        process.StandardInput.Close();
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        using (var cts = new CancellationTokenSource(timeout))
        {
            try
            {
                await process.WaitForExitAsync(cts.Token);
            }
            catch (OperationCanceledException)
            {
                process.Kill(entireProcessTree: true);
                throw new TimeoutException($"{script} did not finish within {timeout}: {await stderr}");
            }
        }

        if (process.ExitCode != 0)
        {
            throw new InvalidOperationException($"{script} failed ({process.ExitCode}): {await stderr}{await stdout}{(context is null ? "" : "\n" + context())}");
        }

        using var document = JsonDocument.Parse(await stdout);
        return document.RootElement.Clone();
    }

    public void Dispose()
    {
        try
        {
            Directory.Delete(Pb2Directory, recursive: true);
        }
        catch (IOException)
        {
            // A temporary directory left behind is harmless.
        }
    }

    private static (int Code, string Output) Run(string file, string[] arguments)
    {
        var info = new ProcessStartInfo(file) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var a in arguments)
        {
            info.ArgumentList.Add(a);
        }

        using var process = Process.Start(info) ?? throw new InvalidOperationException($"Could not start {file}.");
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        if (!process.WaitForExit(s_toolTimeout))
        {
            process.Kill(entireProcessTree: true);
            throw new TimeoutException($"{file} did not finish within {s_toolTimeout}.");
        }

        return (process.ExitCode, stdout.Result + stderr.Result);
    }
}
