using Hyder.Fuzz.Engine;

namespace Hyder.Fuzz.Targets;

/// <summary>Every fuzz target, by name, in the order runs and reports list them.</summary>
public static class TargetRegistry
{
    /// <summary>The target names.</summary>
    public static IReadOnlyList<string> Names { get; } = [.. Create().Select(t => t.Name)];

    /// <summary>New instances of every target.</summary>
    public static IReadOnlyList<FuzzTarget> Create() =>
    [
        new LogFramesTarget(),
        new ProjectionJsonTarget(),
        new BroadcastTarget(),
        new SegmentFileTarget(),
        new IntentionTarget(),
        CheckpointTarget.ByReference(),
        CheckpointTarget.SelfContained(),
        new ControlBlockTarget(),
        new CheckpointInfoTarget(),
        new RpcMessagesTarget(),
        new ServerConfigTarget(),
        new ServerArgsTarget(),
        new LogHostArgsTarget(),
    ];

    /// <summary>A new instance of the target named <paramref name="name"/>, or null.</summary>
    public static FuzzTarget? Create(string name)
    {
        FuzzTarget? found = null;
        foreach (var target in Create())
        {
            if (found is null && target.Name == name)
            {
                found = target;
            }
            else
            {
                target.Dispose();
            }
        }

        return found;
    }
}
