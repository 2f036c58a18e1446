package io.retrysafe.releasecheck;

import com.sun.source.util.JavacTask;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import javax.lang.model.element.Element;
import javax.lang.model.element.ElementKind;
import javax.lang.model.element.ExecutableElement;
import javax.lang.model.element.Modifier;
import javax.lang.model.element.TypeElement;
import javax.lang.model.element.TypeParameterElement;
import javax.lang.model.element.VariableElement;
import javax.lang.model.type.ArrayType;
import javax.lang.model.type.DeclaredType;
import javax.lang.model.type.ExecutableType;
import javax.lang.model.type.TypeKind;
import javax.lang.model.type.TypeMirror;
import javax.lang.model.type.TypeVariable;
import javax.lang.model.type.WildcardType;
import javax.lang.model.util.Elements;
import javax.lang.model.util.Types;
import javax.tools.JavaCompiler;
import javax.tools.StandardJavaFileManager;
import javax.tools.StandardLocation;
import javax.tools.ToolProvider;

/**
 * The public API of one jar or classes directory as sorted text: a line for each public type of its API
 * packages (kind, modifiers, type parameters, supertypes, permitted subclasses) and a line for each public
 * member, and each protected member of a type that is not final (generic signature, modifiers, thrown
 * exceptions, a constant's value), inherited ones included when the supertype declaring them has no lines of
 * its own. Nested types count as types.
 *
 * <p>The class files are read by the compiler's language model, not loaded: a module's classes name types
 * of optional and provided dependencies that no single classpath holds (both Spring Boot starters, one per
 * Boot line, declare classes of the same names), and the model names a type it cannot find without
 * needing it. Annotations are left out, type annotations included, so that the text does not depend on
 * the JDK that reads it.
 */
final class ApiSignatures {
    private static final Set<Modifier> SHOWN = EnumSet.of(Modifier.PUBLIC, Modifier.PROTECTED, Modifier.ABSTRACT,
            Modifier.DEFAULT, Modifier.STATIC, Modifier.SEALED, Modifier.FINAL, Modifier.TRANSIENT, Modifier.VOLATILE,
            Modifier.SYNCHRONIZED, Modifier.NATIVE);

    /**
     * A module's API and how many public top-level types it has: in its API packages, and in all its
     * packages, internal ones included.
     */
    record Api(List<String> lines, int apiTypes, int allTypes) {
    }

    private final Elements elements;
    private final Types types;

    private ApiSignatures(Elements elements, Types types) {
        this.elements = elements;
        this.types = types;
    }

    /**
     * Packages that are not API: any with an {@code internal} part in its name, and {@code io.retrysafe.sql},
     * what the two SQL stores share.
     */
    static boolean isApiPackage(String name) {
        return !("." + name + ".").contains(".internal.") && !name.equals("io.retrysafe.sql")
                && !name.startsWith("io.retrysafe.sql.");
    }

    /** Reads the classes of a jar or a classes directory. */
    static Api read(Path location) {
        return read(location, List.of());
    }

    /**
     * Reads the classes of a jar or a classes directory; {@code dependencies}, other modules' classes, show
     * what its types inherit from theirs.
     */
    static Api read(Path location, List<Path> dependencies) {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        try (StandardJavaFileManager files = javac.getStandardFileManager(null, Locale.ROOT, StandardCharsets.UTF_8)) {
            // The module's own classes first: both Spring Boot starters declare classes of the same names.
            List<File> classpath = new ArrayList<>(List.of(location.toFile()));
            dependencies.forEach(d -> classpath.add(d.toFile()));
            files.setLocation(StandardLocation.CLASS_PATH, classpath);
            JavacTask task = (JavacTask) javac.getTask(null, files, d -> { }, List.of("-proc:none"), null, List.of());
            ApiSignatures reader = new ApiSignatures(task.getElements(), task.getTypes());
            List<TypeElement> types = new ArrayList<>();
            int all = 0;
            for (String name : topLevelClassNames(location)) {
                TypeElement type = reader.elements.getTypeElement(name);
                if (type == null) {
                    throw new IllegalStateException("the compiler cannot read " + name + " of " + location);
                }
                if (type.getModifiers().contains(Modifier.PUBLIC)) {
                    all++;
                    if (isApiPackage(reader.elements.getPackageOf(type).getQualifiedName().toString())) {
                        types.add(type);
                    }
                }
            }
            List<String> lines = new ArrayList<>();
            types.sort(Comparator.comparing(t -> t.getQualifiedName().toString()));
            for (TypeElement type : types) {
                reader.describe(type, lines);
            }
            return new Api(List.copyOf(lines), types.size(), all);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The type's line, its members' lines (inherited ones included) sorted by name, then its visible nested
     * types in the same way.
     */
    private void describe(TypeElement type, List<String> lines) {
        String prefix = type.getQualifiedName() + ": ";
        lines.add(prefix + declaration(type));
        // A sealed type counts: a permitted subclass may be open again (non-sealed), as the store TCK's are.
        boolean extensible = !type.getModifiers().contains(Modifier.FINAL);
        List<String> members = new ArrayList<>();
        Set<String> listed = new HashSet<>();
        List<TypeElement> nested = new ArrayList<>();
        for (Element member : type.getEnclosedElements()) {
            if (!isVisible(member, extensible)) {
                continue;
            }
            if (member instanceof TypeElement t) {
                nested.add(t);
            } else {
                addMember(member, type, members, listed);
            }
        }
        addInherited(type, extensible, members, listed);
        members.stream().sorted(Comparator.comparing(ApiSignatures::memberName).thenComparing(m -> m))
                .forEach(m -> lines.add(prefix + m));
        nested.sort(Comparator.comparing(t -> t.getQualifiedName().toString()));
        for (TypeElement t : nested) {
            describe(t, lines);
        }
    }

    private boolean isVisible(Element member, boolean extensible) {
        Set<Modifier> modifiers = member.getModifiers();
        // A record's components are its accessors and its canonical constructor, listed as such.
        return (modifiers.contains(Modifier.PUBLIC) || (extensible && modifiers.contains(Modifier.PROTECTED)))
                && elements.getOrigin(member) != Elements.Origin.SYNTHETIC
                && member.getKind() != ElementKind.RECORD_COMPONENT;
    }

    /**
     * What users reach through the type though no recorded type declares it: the members of its supertypes
     * that have no lines of their own (not public, or in a package that is not API), up to the first that
     * has, or that is not on the classpath (a library's).
     */
    private void addInherited(TypeElement type, boolean extensible, List<String> members, Set<String> listed) {
        Deque<TypeElement> next = new ArrayDeque<>(unrecordedSupertypes(type));
        Set<TypeElement> seen = new HashSet<>();
        while (!next.isEmpty()) {
            TypeElement supertype = next.pop();
            if (!seen.add(supertype)) {
                continue;
            }
            for (Element member : supertype.getEnclosedElements()) {
                // An interface's static methods are not inherited.
                boolean inherited = member.getKind() == ElementKind.FIELD || (member.getKind() == ElementKind.METHOD
                        && !(supertype.getKind().isInterface() && member.getModifiers().contains(Modifier.STATIC)));
                if (inherited && isVisible(member, extensible)) {
                    addMember(member, type, members, listed);
                }
            }
            next.addAll(unrecordedSupertypes(supertype));
        }
    }

    private List<TypeElement> unrecordedSupertypes(TypeElement type) {
        List<TypeMirror> direct = new ArrayList<>(List.of(type.getSuperclass()));
        direct.addAll(type.getInterfaces());
        List<TypeElement> unrecorded = new ArrayList<>();
        for (TypeMirror supertype : direct) {
            TypeElement element = supertype.getKind() == TypeKind.DECLARED ? elements.getTypeElement(name(supertype))
                    : null;
            if (element != null && !isRecorded(element)) {
                unrecorded.add(element);
            }
        }
        return unrecorded;
    }

    /** Whether the type has lines of its own, in this baseline or in another module's. */
    private boolean isRecorded(TypeElement type) {
        for (Element e = type; e instanceof TypeElement t; e = t.getEnclosingElement()) {
            if (!t.getModifiers().contains(Modifier.PUBLIC) && !t.getModifiers().contains(Modifier.PROTECTED)) {
                return false;
            }
        }
        return isApiPackage(elements.getPackageOf(type).getQualifiedName().toString());
    }

    /** Adds a member's line, unless one the owner declares or inherits from nearer hides or overrides it. */
    private void addMember(Element member, TypeElement owner, List<String> members, Set<String> listed) {
        TypeMirror type = typeIn(member, owner);
        if (member instanceof ExecutableElement method && type instanceof ExecutableType signature) {
            String key = method.getSimpleName() + signature.getParameterTypes().stream()
                    .map(p -> render(types.erasure(p))).collect(Collectors.joining(",", "(", ")"));
            if (listed.add(key)) {
                members.add(method(method, signature, owner));
            }
        } else if (member instanceof VariableElement field && listed.add(field.getSimpleName().toString())) {
            members.add(field(field, type));
        }
    }

    /** The member's type in the owner: an inherited one's type variables replaced by what the owner gives them. */
    private TypeMirror typeIn(Element member, TypeElement owner) {
        if (member.getEnclosingElement().equals(owner)) {
            return member.asType();
        }
        try {
            return types.asMemberOf((DeclaredType) owner.asType(), member);
        } catch (RuntimeException e) {
            // A type between them is not on the classpath (the compiler's CompletionFailure): as declared, then.
            return member.asType();
        }
    }

    private static String declaration(TypeElement type) {
        StringBuilder line = new StringBuilder(modifiers(type));
        line.append(switch (type.getKind()) {
            case INTERFACE -> "interface";
            case ANNOTATION_TYPE -> "@interface";
            case ENUM -> "enum";
            case RECORD -> "record";
            default -> "class";
        });
        line.append(' ').append(type.getSimpleName()).append(typeParameters(type.getTypeParameters()));
        TypeMirror superclass = type.getSuperclass();
        // ERROR: a class that is not on the classpath (a library's), named all the same.
        boolean named = superclass.getKind() == TypeKind.DECLARED || superclass.getKind() == TypeKind.ERROR;
        if (named && !Set.of("java.lang.Object", "java.lang.Enum",
                "java.lang.Record").contains(name(superclass))) {
            line.append(" extends ").append(render(superclass));
        }
        // Every annotation interface extends Annotation; saying so would only add noise.
        if (!type.getInterfaces().isEmpty() && type.getKind() != ElementKind.ANNOTATION_TYPE) {
            boolean isInterface = type.getKind().isInterface();
            line.append(isInterface ? " extends " : " implements ").append(join(type.getInterfaces()));
        }
        if (!type.getPermittedSubclasses().isEmpty()) {
            // As source names them: without type arguments; sorted, since their order changes nothing.
            line.append(" permits ").append(type.getPermittedSubclasses().stream().map(ApiSignatures::name).sorted()
                    .collect(Collectors.joining(", ")));
        }
        return line.toString();
    }

    private static String method(ExecutableElement method, ExecutableType signature, TypeElement owner) {
        StringBuilder line = new StringBuilder(modifiers(method));
        String typeParameters = typeParameters(method.getTypeParameters());
        if (!typeParameters.isEmpty()) {
            line.append(typeParameters).append(' ');
        }
        if (method.getKind() == ElementKind.CONSTRUCTOR) {
            line.append(owner.getSimpleName());
        } else {
            line.append(render(signature.getReturnType())).append(' ').append(method.getSimpleName());
        }
        List<String> parameters = signature.getParameterTypes().stream().map(ApiSignatures::render)
                .collect(Collectors.toCollection(ArrayList::new));
        if (method.isVarArgs()) {
            int last = parameters.size() - 1;
            String array = parameters.get(last);
            parameters.set(last, array.substring(0, array.length() - "[]".length()) + "...");
        }
        line.append('(').append(String.join(", ", parameters)).append(')');
        if (!signature.getThrownTypes().isEmpty()) {
            line.append(" throws ").append(join(signature.getThrownTypes()));
        }
        return line.toString();
    }

    private String field(VariableElement field, TypeMirror type) {
        String line = modifiers(field) + render(type) + " " + field.getSimpleName();
        // A compile-time constant is copied into the classes that use it: changing it is an API change.
        Object constant = field.getConstantValue();
        return constant == null ? line : line + " = " + elements.getConstantExpression(constant);
    }

    private static String memberName(String line) {
        int parameters = line.indexOf('(');
        String head = parameters < 0 ? line.split(" = ", 2)[0] : line.substring(0, parameters);
        return head.substring(head.lastIndexOf(' ') + 1);
    }

    private static String modifiers(Element element) {
        StringBuilder text = new StringBuilder();
        for (Modifier modifier : element.getModifiers()) {
            // Every interface is abstract; saying so for each would only add noise.
            boolean implicit = modifier == Modifier.ABSTRACT && element.getKind().isInterface();
            if (SHOWN.contains(modifier) && !implicit) {
                text.append(modifier).append(' ');
            }
        }
        return text.toString();
    }

    private static String typeParameters(List<? extends TypeParameterElement> parameters) {
        if (parameters.isEmpty()) {
            return "";
        }
        return parameters.stream().map(p -> {
            List<? extends TypeMirror> bounds = p.getBounds().stream()
                    .filter(b -> !(b.getKind() == TypeKind.DECLARED && name(b).equals("java.lang.Object")))
                    .toList();
            return bounds.isEmpty() ? p.getSimpleName().toString()
                    : p.getSimpleName() + " extends " + bounds.stream().map(ApiSignatures::render)
                            .collect(Collectors.joining(" & "));
        }).collect(Collectors.joining(", ", "<", ">"));
    }

    private static String join(List<? extends TypeMirror> types) {
        return types.stream().map(ApiSignatures::render).collect(Collectors.joining(", "));
    }

    /** A type as source would spell it, qualified, without annotations. */
    static String render(TypeMirror type) {
        return switch (type.getKind()) {
            case DECLARED, ERROR -> {
                DeclaredType declared = (DeclaredType) type;
                String arguments = declared.getTypeArguments().isEmpty() ? ""
                        : declared.getTypeArguments().stream().map(ApiSignatures::render)
                                .collect(Collectors.joining(", ", "<", ">"));
                yield name(type) + arguments;
            }
            case ARRAY -> render(((ArrayType) type).getComponentType()) + "[]";
            case TYPEVAR -> ((TypeVariable) type).asElement().getSimpleName().toString();
            case WILDCARD -> {
                WildcardType wildcard = (WildcardType) type;
                yield wildcard.getExtendsBound() != null ? "? extends " + render(wildcard.getExtendsBound())
                        : wildcard.getSuperBound() != null ? "? super " + render(wildcard.getSuperBound()) : "?";
            }
            default -> type.getKind().toString().toLowerCase(Locale.ROOT);
        };
    }

    private static String name(TypeMirror declared) {
        return ((TypeElement) ((DeclaredType) declared).asElement()).getQualifiedName().toString();
    }

    /** The binary names of the classes in a jar or directory that are not nested in another. */
    private static Set<String> topLevelClassNames(Path location) throws IOException {
        Set<String> names = new TreeSet<>();
        if (Files.isDirectory(location)) {
            try (Stream<Path> files = Files.walk(location)) {
                files.map(f -> location.relativize(f).toString().replace(location.getFileSystem().getSeparator(), "/"))
                        .forEach(f -> addClassName(f, names));
            }
        } else {
            try (ZipFile jar = new ZipFile(location.toFile())) {
                jar.stream().map(ZipEntry::getName).forEach(f -> addClassName(f, names));
            }
        }
        return names;
    }

    private static void addClassName(String file, Set<String> names) {
        // Nested classes are reached from their outer class (a '$' in a top-level class name is legal, but
        // no module here has one); module-info and package-info declare no class.
        if (file.endsWith(".class") && !file.contains("$") && !file.endsWith("-info.class")
                && !file.startsWith("META-INF/")) {
            names.add(file.substring(0, file.length() - ".class".length()).replace('/', '.'));
        }
    }
}
